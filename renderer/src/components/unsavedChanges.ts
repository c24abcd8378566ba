import { useEffect } from "react";

/**
 * Unsaved changes on the page shown now (Settings): the app's navigation asks before leaving
 * while this says there are some, and closing the window asks through `beforeunload`.
 */
let pending = false;

export function hasUnsavedChanges(): boolean {
  return pending;
}

/** The user chose Discard: the page is left without its changes. */
export function discardUnsavedChanges(): void {
  pending = false;
}

/** A page with a form: `dirty` while it holds changes not saved yet. */
export function useUnsavedChanges(dirty: boolean): void {
  useEffect(() => {
    pending = dirty;
    if (!dirty) return;
    const onUnload = (e: BeforeUnloadEvent) => {
      if (!pending) return;
      e.preventDefault();
      // Older browsers and Electron read the return value.
      e.returnValue = "";
    };
    window.addEventListener("beforeunload", onUnload);
    return () => {
      pending = false;
      window.removeEventListener("beforeunload", onUnload);
    };
  }, [dirty]);
}

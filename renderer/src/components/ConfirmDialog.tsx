import { useEffect, useRef, type KeyboardEvent, type ReactNode } from "react";

/** Tab and Shift+Tab wrap around inside the dialog, so keyboard focus never leaves it while it is open. */
export function trapTab(e: KeyboardEvent<HTMLElement>) {
  if (e.key !== "Tab") return;
  const items = [
    ...e.currentTarget.querySelectorAll<HTMLElement>("button:not(:disabled), [href], input:not(:disabled), select, textarea, [tabindex]:not([tabindex='-1'])"),
  ];
  if (items.length === 0) return;
  const first = items[0];
  const last = items[items.length - 1];
  const active = document.activeElement;
  if (e.shiftKey && (active === first || !e.currentTarget.contains(active))) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (active === last || !e.currentTarget.contains(active))) {
    e.preventDefault();
    first.focus();
  }
}

/**
 * A modal question with two answers, as the app's dialogs look (the roll back confirm): Esc
 * and the first button cancel; focus starts on `focus` ("cancel" for a choice that loses work).
 */
export function ConfirmDialog({
  title,
  children,
  cancelLabel,
  confirmLabel,
  onCancel,
  onConfirm,
  focus = "confirm",
}: {
  title: string;
  children: ReactNode;
  cancelLabel: string;
  confirmLabel: string;
  onCancel: () => void;
  onConfirm: () => void;
  focus?: "cancel" | "confirm";
}) {
  const ref = useRef<HTMLDialogElement | null>(null);
  const cancelButton = useRef<HTMLButtonElement | null>(null);
  const confirmButton = useRef<HTMLButtonElement | null>(null);
  useEffect(() => {
    ref.current?.showModal();
    // showModal focuses the first button; React's autoFocus ran before it.
    (focus === "cancel" ? cancelButton : confirmButton).current?.focus();
  }, [focus]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby="confirm-title"
      onKeyDown={trapTab}
      onCancel={(e) => {
        // Esc: React removes the dialog (the browser would close it and restore focus itself, racing React).
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="confirm-title">{title}</h2>
      {children}
      <div className="actions">
        <button type="button" ref={cancelButton} onClick={onCancel}>
          {cancelLabel}
        </button>
        <button type="button" className="primary" ref={confirmButton} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

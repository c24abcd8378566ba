import { useEffect, useRef, useState } from "react";
import { useCore } from "../../api/core.js";
import { errorFromResponse, messageOf, type CoreClient } from "../../api/client.js";

/**
 * Downloads the chat as the core exports it (GET /api/sessions/:id/export, with the token): the
 * renderer cannot write files, so the reply becomes a Blob saved through a download link.
 */
async function downloadExport(client: CoreClient, sessionId: string, format: "md" | "json"): Promise<void> {
  const res = await client.raw(`/api/sessions/${encodeURIComponent(sessionId)}/export?format=${format}`);
  if (!res.ok) throw await errorFromResponse(res, "Export");
  const blob = await res.blob();
  const name = /filename="?([^";]+)"?/.exec(res.headers.get("Content-Disposition") ?? "")?.[1] ?? `chat-${sessionId}.${format}`;
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The chat's menu in its header: export the chat as Markdown or JSON. */
export function ChatMenu({ sessionId }: { sessionId: string | null }) {
  const { client } = useCore();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const root = useRef<HTMLDivElement | null>(null);
  // A click elsewhere or Esc closes it.
  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => !root.current?.contains(e.target as Node) && setOpen(false);
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    window.addEventListener("mousedown", onDown);
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("mousedown", onDown);
      window.removeEventListener("keydown", onKey);
    };
  }, [open]);

  const run = (format: "md" | "json") => {
    setOpen(false);
    if (!sessionId) return;
    setError(null);
    downloadExport(client, sessionId, format).catch((e: unknown) => setError(`Export failed: ${messageOf(e)}`));
  };

  return (
    <div className="chat-menu" ref={root}>
      <button
        type="button"
        className="icon"
        aria-label="Chat menu"
        title="Chat menu"
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => {
          setError(null);
          setOpen((o) => !o);
        }}
      >
        ⋯
      </button>
      {open && (
        <div className="chat-menu-items" role="menu" aria-label="Chat">
          <button type="button" role="menuitem" disabled={!sessionId} onClick={() => run("md")}>
            Export as Markdown
          </button>
          <button type="button" role="menuitem" disabled={!sessionId} onClick={() => run("json")}>
            Export as JSON
          </button>
          {!sessionId && <p className="small muted">Send a message first: a new chat has nothing to export yet.</p>}
        </div>
      )}
      {error && (
        <span className="small error-text" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

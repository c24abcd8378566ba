import { splitAttachments, type ParsedAttachmentBlock } from "../../../../../electron/core/api/attachments.js";
import { fmtBytes } from "../../../components/format.js";
import { FileIcon } from "../../../components/Icons.js";
import { useAttachmentView } from "./attachmentViews.js";
import type { Attachments, PendingAttachment } from "./useAttachments.js";
import "./attachments.css";

const fmtChars = (n: number) => n.toLocaleString("en-US");

function PendingChip({ it, onRemove }: { it: PendingAttachment; onRemove: () => void }) {
  const cut = it.view?.truncated ? it.view : null;
  return (
    <li className={`attachment-chip ${it.state}`} aria-busy={it.state === "uploading"}>
      <span className="attachment-main">
        <FileIcon />
        <span className="attachment-name" title={it.name}>
          {it.name}
        </span>
        <span className="attachment-size muted">{it.state === "uploading" ? "reading…" : fmtBytes(it.view?.size ?? it.size)}</span>
        <button type="button" className="icon attachment-remove" aria-label={`Remove ${it.name}`} title="Remove" onClick={onRemove}>
          ×
        </button>
      </span>
      {cut && (
        <span className="attachment-note">
          Cut to {fmtChars(cut.keptChars)} of {fmtChars(cut.chars)} characters to fit the model's context
        </span>
      )}
      {it.state === "refused" && (
        <span className="attachment-note error" role="alert">
          {it.error}
        </span>
      )}
    </li>
  );
}

/** The files attached to the message being written, above the composer; a hint while files are dragged over the window. */
export function AttachmentChips({ att }: { att: Attachments }) {
  if (att.items.length === 0 && !att.dragging) return null;
  return (
    <div className="attachments-pending">
      {att.dragging && <p className="attachment-drop">Drop files to attach them to your message</p>}
      {att.items.length > 0 && (
        <ul className="attachment-chips" aria-label="Attached files">
          {att.items.map((it) => (
            <PendingChip key={it.key} it={it} onRemove={() => att.remove(it.key)} />
          ))}
        </ul>
      )}
    </div>
  );
}

function SentChip({ block }: { block: ParsedAttachmentBlock }) {
  const view = useAttachmentView(block.id);
  return (
    <li className="attachment-chip ready" title={block.truncated ? `${block.name}: cut to fit the model's context` : block.name}>
      <span className="attachment-main">
        <FileIcon />
        <span className="attachment-name">{block.name}</span>
        {view && <span className="attachment-size muted">{fmtBytes(view.size)}</span>}
        {block.truncated && <span className="attachment-size muted">· cut</span>}
      </span>
    </li>
  );
}

/** A sent message: what the user typed, and its attached files as chips (never their raw text). */
export function MessageContent({ content }: { content: string }) {
  if (!content.includes("<attachment ")) return content;
  const { typed, blocks } = splitAttachments(content);
  if (blocks.length === 0) return content;
  return (
    <>
      {typed}
      <ul className="attachment-chips sent" aria-label="Attached files">
        {blocks.map((b) => (
          <SentChip key={b.id} block={b} />
        ))}
      </ul>
    </>
  );
}

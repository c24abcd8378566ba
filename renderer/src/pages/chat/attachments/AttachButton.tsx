import { useRef } from "react";
import { PaperclipIcon } from "../../../components/Icons.js";
import type { Attachments } from "./useAttachments.js";
import "./attachments.css";

/** What the file picker offers (anything else can still be dropped: the core says why it refuses it). */
const ACCEPT =
  ".txt,.md,.markdown,.csv,.tsv,.json,.jsonl,.pdf,.log,.py,.js,.ts,.tsx,.jsx,.mjs,.go,.rs,.java,.kt,.c,.h,.cpp,.hpp,.cs,.rb,.php,.swift,.sh,.sql,.html,.css,.xml,.yaml,.yml,.toml,.ini,text/*,application/json,application/pdf";

/** The paperclip: picks files to attach to the message. */
export function AttachButton({ att, disabled }: { att: Attachments; disabled: boolean }) {
  const input = useRef<HTMLInputElement | null>(null);
  return (
    <>
      <button
        type="button"
        className="icon attach-button"
        aria-label="Attach files"
        title="Attach files: text, Markdown, code, CSV, JSON or PDF (or drop them on the chat, or paste)"
        disabled={disabled}
        onClick={() => input.current?.click()}
      >
        <PaperclipIcon />
      </button>
      <input
        ref={input}
        type="file"
        multiple
        accept={ACCEPT}
        hidden
        data-testid="attach-input"
        onChange={(e) => {
          if (e.target.files?.length) att.add([...e.target.files]);
          e.target.value = "";
        }}
      />
    </>
  );
}

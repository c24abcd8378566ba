import type { ReactNode, RefObject } from "react";
import { CopyButton } from "../../components/Markdown.js";
import { ThumbDownIcon, ThumbUpIcon } from "../../components/Icons.js";
import { adapterLabel } from "../../components/format.js";
import { AnswerSpeedNote } from "./AnswerSpeedNote.js";
import type { DisplayMessage } from "./displayMessage.js";

/** The row under a finished answer: thumbs and hint (when it can be rated), copy, regenerate, the caller's actions, which model wrote it, its speed and preferences. */
export function AnswerActions({
  msg,
  canRate,
  saving,
  hinting,
  hintButton,
  showRegenerate,
  onThumb,
  onToggleHint,
  onRegenerate,
  children,
}: {
  msg: DisplayMessage;
  canRate: boolean;
  saving: boolean;
  hinting: boolean;
  hintButton: RefObject<HTMLButtonElement | null>;
  showRegenerate: boolean;
  onThumb: (t: "up" | "down") => void;
  onToggleHint: () => void;
  onRegenerate: () => void;
  /** more actions (edit, versions, delete), after Regenerate */
  children?: ReactNode;
}) {
  return (
    <div className="msg-tools">
      {canRate && (
        <>
          <button
            type="button"
            className={msg.thumbs === "up" ? "icon thumb on up" : "icon thumb"}
            aria-pressed={msg.thumbs === "up"}
            aria-label="Thumbs up"
            title={msg.thumbs === "up" ? "Rated up: click to withdraw" : "Good answer"}
            aria-disabled={saving}
            onClick={() => onThumb("up")}
          >
            <ThumbUpIcon />
            {msg.thumbs === "up" && <span className="thumb-label">Rated up</span>}
          </button>
          <button
            type="button"
            className={msg.thumbs === "down" ? "icon thumb on down" : "icon thumb"}
            aria-pressed={msg.thumbs === "down"}
            aria-label="Thumbs down"
            title={msg.thumbs === "down" ? "Rated down: click to withdraw" : "Bad answer"}
            aria-disabled={saving}
            onClick={() => onThumb("down")}
          >
            <ThumbDownIcon />
            {msg.thumbs === "down" && <span className="thumb-label">Rated down</span>}
          </button>
          <button type="button" className="link" ref={hintButton} aria-expanded={hinting} onClick={onToggleHint}>
            {msg.hint ? "Edit hint" : "Add hint"}
          </button>
        </>
      )}
      {msg.content && <CopyButton text={msg.content} label="Copy answer" />}
      {showRegenerate && (
        <button type="button" className="link" onClick={onRegenerate}>
          Regenerate
        </button>
      )}
      {children}
      <span className="tag answer-source" title="The model, and the adapter on it, that wrote this answer">
        {[msg.model, msg.adapter ? adapterLabel(msg.adapter) : null].filter(Boolean).join(" · ") || "—"}
      </span>
      {msg.speed && <AnswerSpeedNote speed={msg.speed} />}
      {(msg.preferences ?? 0) > 0 && (
        <a className="tag answer-prefs" href="#/preferences" title="Your standing preferences were in this answer's prompt">
          {msg.preferences === 1 ? "1 preference" : `${msg.preferences} preferences`}
        </a>
      )}
    </div>
  );
}

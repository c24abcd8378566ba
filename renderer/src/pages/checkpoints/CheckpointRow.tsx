import type { CheckpointView } from "../../../../electron/core/api/training.js";
import { fmtNum, fmtTime } from "../../components/format.js";
import { epochOf } from "../../format/time.js";
import { isForward, usable } from "./rollDirection.js";

/** One checkpoint in the table: its version and tags, figures, gate verdict, model, and Pin and Roll back/forward. */
export function CheckpointRow({
  c,
  activeN,
  showModel,
  swapping,
  onPin,
  onAsk,
}: {
  c: CheckpointView;
  activeN: number | null;
  showModel: boolean;
  swapping: boolean;
  onPin: (c: CheckpointView) => void;
  onAsk: (c: CheckpointView, button: HTMLButtonElement) => void;
}) {
  const revertReason = c.reverted?.reason ?? null;
  return (
    <tr className={c.active ? "active-row" : undefined}>
      <td className="version-cell" id={`cp-${c.n}`}>
        <strong>{c.version}</strong> {c.active && <span className="tag tag-active">active</span>} {c.pinned && <span className="tag">pinned</span>}{" "}
        {c.imported && <span className="tag">imported</span>}
      </td>
      <td className="nowrap">{fmtTime(epochOf(c.createdAt))}</td>
      <td>{c.samples}</td>
      <td>{fmtNum(c.meanReward)}</td>
      <td>{fmtNum(c.kl, 4)}</td>
      <td>
        <span
          className={/pass|publish|accept/i.test(c.verdict) ? "tag tag-ok" : /revert/i.test(c.verdict) ? "tag tag-warn" : "tag tag-bad"}
          title={revertReason ?? undefined}
        >
          {/revert/i.test(c.verdict) ? "rolled back" : c.verdict}
        </span>
        {revertReason && <div className="small muted revert-reason">{revertReason}</div>}
      </td>
      {showModel && (
        <td className="clip model-cell" title={c.model ?? undefined}>
          {c.model?.replace(/\.gguf$/i, "") ?? "—"}
        </td>
      )}
      <td className="nowrap row-actions">
        <button type="button" aria-describedby={`cp-${c.n}`} onClick={() => onPin(c)}>
          {c.pinned ? "Unpin" : "Pin"}
        </button>
        <button
          type="button"
          disabled={c.active || swapping || !usable(c) || !c.forServedModel}
          title={
            !usable(c)
              ? "The safety check (publish gate) rejected this version; it is kept for inspection only"
              : !c.forServedModel
                ? `Trained on ${c.model ?? "another model"}: serve that model to use it`
                : undefined
          }
          aria-describedby={`cp-${c.n}`}
          onClick={(e) => onAsk(c, e.currentTarget)}
        >
          {isForward(c, activeN) ? "Roll forward" : "Roll back"}
        </button>
      </td>
    </tr>
  );
}

/** The table's last row: the model with no adapter, where learning started, which can always be served again. */
export function BaseModelRow({
  active,
  servedModel,
  showModel,
  swapping,
  onAsk,
}: {
  active: boolean;
  servedModel: string | null;
  showModel: boolean;
  swapping: boolean;
  onAsk: (button: HTMLButtonElement) => void;
}) {
  return (
    <tr className={active ? "active-row" : undefined}>
      <td className="nowrap" id="cp-base">
        <strong>No adapter</strong> {active && <span className="tag tag-active">active</span>}
      </td>
      <td colSpan={showModel ? 6 : 5} className="muted small">
        {servedModel ?? "The base model"} as downloaded: where learning started
      </td>
      <td className="nowrap row-actions">
        <button type="button" disabled={active || swapping} aria-describedby="cp-base" onClick={(e) => onAsk(e.currentTarget)}>
          Roll back
        </button>
      </td>
    </tr>
  );
}

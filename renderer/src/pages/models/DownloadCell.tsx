import type { DownloadView } from "../../../../electron/core/api/models.js";
import { fmtBytes, fmtDuration } from "../../components/format.js";
import type { ModelAction } from "./useModelActions.js";

/** Whether a download is under way or paused (a row then offers Pause or Resume, and Cancel). */
export const downloadActive = (d: DownloadView | null): boolean => Boolean(d && /download|running|paused|queued/i.test(d.state));

/** A download's bar and its words: bytes of the total, speed and time left while bytes arrive, its state, its error. */
export function DownloadProgress({ d, name }: { d: DownloadView; name: string }) {
  return (
    <>
      {/* A download that failed before a byte arrived has no bar to show: its error says why. */}
      {!(d.state === "failed" && d.bytes === 0) && <progress aria-label={`Download of ${name}`} max={d.total ?? undefined} value={d.bytes} />}
      <div className="small muted">
        {/* Speed and time left only while bytes are arriving (a paused download has neither). */}
        {[
          `${fmtBytes(d.bytes)}${d.total ? ` of ${fmtBytes(d.total)}` : ""}`,
          d.speed ? `${fmtBytes(d.speed)}/s` : null,
          d.etaSeconds !== null && /download/i.test(d.state) ? `${fmtDuration(d.etaSeconds)} left` : null,
          d.state,
        ]
          .filter(Boolean)
          .join(" · ")}
      </div>
      {d.error && <div className="small error-text">{d.error}</div>}
    </>
  );
}

/** A model id in a path: each segment encoded on its own (an id may hold slashes: hf:owner/repo/file.gguf). */
export const modelIdPath = (id: string) => id.split("/").map(encodeURIComponent).join("/");

/** Pause or Resume, and Cancel, for a download under way. */
export function DownloadButtons({ id, d, onAct }: { id: string; d: DownloadView; onAct: ModelAction }) {
  const p = modelIdPath(id);
  return (
    <>
      {/paused/i.test(d.state) ? (
        <button type="button" onClick={() => void onAct("Resume", `/api/models/${p}/resume`)}>
          Resume
        </button>
      ) : (
        <button type="button" onClick={() => void onAct("Pause", `/api/models/${p}/pause`)}>
          Pause
        </button>
      )}
      <button type="button" onClick={() => void onAct("Cancel", `/api/models/${p}/cancel`)}>
        Cancel
      </button>
    </>
  );
}

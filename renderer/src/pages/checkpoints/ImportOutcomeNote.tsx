import { ErrorNote } from "../../components/Notices.js";
import type { ImportOutcome } from "./useAdapterImport.js";

/** What became of an import: served, kept but rejected by the gate (with its reasons), or not imported. */
export function ImportOutcomeNote({ outcome }: { outcome: ImportOutcome | null }) {
  return (
    <>
      {outcome?.kind === "published" && (
        <div className="note note-ok note-block" role="status">
          Imported as <strong>{outcome.version}</strong>. The publish gate passed it and it is served now
          {outcome.pauseMs !== null ? ` (the swap held new requests for ${Math.round(outcome.pauseMs)} ms)` : ""}.
          {outcome.warnings.map((w) => (
            <div key={w} className="small">
              Note: {w}
            </div>
          ))}
        </div>
      )}
      {outcome?.kind === "rejected" && (
        <div className="note note-muted note-block" role="status">
          Imported as <strong>{outcome.version}</strong>, but the publish gate rejected it: {outcome.reasons.join("; ") || "no reason given"}. It is kept for
          inspection; the served adapter is unchanged.
          {outcome.warnings.map((w) => (
            <div key={w} className="small">
              Note: {w}
            </div>
          ))}
        </div>
      )}
      {outcome?.kind === "error" && <ErrorNote error={`Not imported: ${outcome.message}`} />}
    </>
  );
}

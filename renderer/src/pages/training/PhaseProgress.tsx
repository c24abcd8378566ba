import type { PhaseProgressView } from "../../../../electron/core/api/training.js";

/** What each part of a run is doing, as the progress bar names it. */
const progressLabels: Record<PhaseProgressView["part"], string> = {
  steps: "Training progress",
  scores: "Checking how far the new adapter moved",
  answers: "Reading the new adapter's own answers",
};

/** The progress bar with its caption: "Training progress · 45%". */
export function PhaseProgress({ progress }: { progress: PhaseProgressView }) {
  const label = progressLabels[progress.part];
  return (
    <div className="phase-progress">
      <progress className="wide-progress" aria-label={label} max={1} value={progress.fraction} />
      <span className="small muted">
        {label} · {Math.floor(progress.fraction * 100)}%
      </span>
    </div>
  );
}

import { finite } from "../../format/time.js";
import { isPaused, type LearnerView } from "../../format/training.js";

/** "Training step 3 of 8 · about 4 min left", "Checking the new adapter · about 2 min left", "Idle" … */
export function describeTraining(t: LearnerView): string {
  const s = t.state.toLowerCase();
  if (isPaused(t)) return "Paused";
  // The trainer's memory plan refused the served model: not a fault, the model is too large here.
  if (t.memory && !t.memory.fits && !s.includes("train")) return "Learning off";
  const p = t.progress ?? null;
  if (s.includes("train")) {
    const step = finite(t.step);
    const steps = finite(t.steps);
    const stepSeconds = finite(t.stepSeconds);
    if (step === null || steps === null) return "Training";
    // The time left at the rate of this run so far, else from the last run's step time.
    const left = timeLeft(p?.part === "steps" && p.secondsLeft !== null ? p.secondsLeft : stepSeconds !== null ? (steps - step) * stepSeconds : null);
    return `Training step ${Math.min(steps, step + 1)} of ${steps}${left ? ` · ${left}` : ""}`;
  }
  const label = phaseLabels[s] ?? s.charAt(0).toUpperCase() + s.slice(1);
  const left = s === "evaluating" && p && p.part !== "steps" ? timeLeft(p.secondsLeft) : null;
  return `${label}${left ? ` · ${left}` : ""}`;
}

/** The other phases of a run in the user's words (the gate takes minutes at real sizes, so it is worth naming). */
const phaseLabels: Record<string, string> = {
  starting: "Starting the trainer",
  evaluating: "Checking the new adapter",
  publishing: "Swapping the new adapter in",
  restarting: "Restarting the trainer",
};

/** "about 4 min left" from seconds; a rough figure, so whole minutes (or "under a minute"); null when not known. */
export function timeLeft(seconds: number | null): string | null {
  if (seconds === null || !Number.isFinite(seconds) || seconds <= 0) return null;
  if (seconds < 60) return "under a minute left";
  const min = Math.round(seconds / 60);
  return min < 90 ? `about ${min} min left` : `about ${(seconds / 3600).toFixed(1)} h left`;
}

import type { RevertNote, TrainingStatus } from "../../api/shapes.js";
import { Card } from "../../components/Card.js";
import { ErrorNote } from "../../components/Notices.js";
import { fmtBytes, fmtTime } from "../../components/format.js";
import { memoryNeed } from "../../components/Trainability.js";
import { backendWords, terms } from "../../components/terms.js";
import { describeTraining } from "./describeTraining.js";
import { PhaseProgress } from "./PhaseProgress.js";

/** The learner now: its figures, the trainer's memory and restarts, the run's progress, and why learning is off or rolled back. */
export function LearnerStatus({ training, serving }: { training: TrainingStatus | null; serving: string }) {
  return (
    <>
      <div className="cards" role="group" aria-label="Learner">
        <Card label={terms.now} value={training ? describeTraining(training) : "—"} live />
        <Card label={terms.backend} value={training ? backendWords(training.backend, training.device).text : "—"} detail={training ? backendWords(training.backend, training.device).detail : undefined} />
        <Card label={terms.samplesWaiting} value={training?.samplesWaiting ?? "—"} />
        <Card label={terms.judgeQueue} value={training?.judgeQueue ?? "—"} />
        <Card label={terms.serving} value={serving} />
        <Card label={terms.lastSwap} value={training?.lastSwapMs != null ? `${Math.round(training.lastSwapMs)} ms` : "—"} />
      </div>
      {training && (training.loss !== null || training.restarts || training.trainerMemory) ? (
        <p className="small muted" aria-label="Trainer">
          {training.loss !== null ? `${terms.loss.label} (${terms.loss.term}) ${Number(training.loss.toPrecision(3))}. ` : ""}
          {training.trainerMemory
            ? `The trainer holds ${fmtBytes(training.trainerMemory.rssBytes)} of memory (the model and adapter ${fmtBytes(training.trainerMemory.tensorBytes)}). `
            : ""}
          {training.restarts ? `The trainer restarted ${training.restarts} time${training.restarts === 1 ? "" : "s"}.` : ""}
        </p>
      ) : null}
      {training?.progress ? <PhaseProgress progress={training.progress} /> : null}
      {training?.memory && !training.memory.fits ? (
        <div className="note note-error note-block" role="alert" aria-label="Learning is off">
          <strong>Learning is off for this model.</strong> Chat keeps working with the model as it is, but it cannot be trained on this
          machine: it needs {memoryNeed(training.memory, training.backend)}. A smaller model, or a machine with a GPU, can learn.
          <div className="small">{training.memory.summary}</div>
        </div>
      ) : training?.lastError ? (
        <ErrorNote error={`Last training error: ${training.lastError}`} />
      ) : null}
      {training?.lastRevert ? <RevertNotice revert={training.lastRevert} /> : null}
      {training?.watch ? (
        <p className="small muted" aria-label="Watch on the served adapter">
          Watching ckpt-{training.watch.checkpoint} against {training.watch.parent === null ? "the base model" : `ckpt-${training.watch.parent}`}: {training.watch.rated} rated turn
          {training.watch.rated === 1 ? "" : "s"} so far
          {training.watch.meanReward !== null && training.watch.parentMeanReward !== null
            ? ` (mean reward ${signed(training.watch.meanReward)} vs ${signed(training.watch.parentMeanReward)})`
            : ""}
          . If its answers turn out clearly worse, the learner rolls back by itself.
        </p>
      ) : null}
      {training?.memory?.fits && training.memory.maxContext < training.memory.requestedMaxContext ? (
        <p className="small muted">Memory limits training to the last {training.memory.maxContext} tokens of each conversation (asked {training.memory.requestedMaxContext}).</p>
      ) : null}
    </>
  );
}

const signed = (x: number) => `${x > 0 ? "+" : x < 0 ? "−" : ""}${Math.abs(x).toFixed(2)}`;

/** The learner rolled a checkpoint back by itself: what, to what, and why. */
function RevertNotice({ revert }: { revert: RevertNote }) {
  return (
    <div className="note note-warn note-block" role="status" aria-label="Rolled back">
      <strong>
        Rolled back ckpt-{revert.checkpoint} to {revert.to === null ? "the base model" : `ckpt-${revert.to}`} by itself
      </strong>
      {revert.at !== null ? ` (${fmtTime(revert.at)})` : ""}: {revert.reason}. The checkpoint and what it was trained on are kept; learning goes on from{" "}
      {revert.to === null ? "the base model" : `ckpt-${revert.to}`}.
    </div>
  );
}

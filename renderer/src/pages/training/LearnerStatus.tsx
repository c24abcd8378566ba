import type { RevertView } from "../../../../electron/core/api/training.js";
import { Card } from "../../components/Card.js";
import { ErrorNote } from "../../components/Notices.js";
import { fmtBytes, fmtTime } from "../../components/format.js";
import { memoryNeed } from "../../components/Trainability.js";
import { backendWords, terms } from "../../components/terms.js";
import { epochOf, finite } from "../../format/time.js";
import { judgeQueueOf, lastSwapMs, memoryNeedOf, type LearnerView } from "../../format/training.js";
import { describeTraining } from "./describeTraining.js";
import { PhaseProgress } from "./PhaseProgress.js";

/** The learner now: its figures, the trainer's memory and restarts, the run's progress, and why learning is off or rolled back. */
export function LearnerStatus({ training, serving }: { training: LearnerView | null; serving: string }) {
  const backend = training?.backend ?? null;
  const device = training?.device ?? null;
  const swapMs = training ? lastSwapMs(training) : null;
  const loss = finite(training?.loss);
  const memory = training?.memory ?? null;
  const watch = training?.watch ?? null;
  return (
    <>
      <div className="cards" role="group" aria-label="Learner">
        <Card label={terms.now} value={training ? describeTraining(training) : "—"} live />
        <Card
          label={terms.backend}
          value={training ? backendWords(backend, device).text : "—"}
          detail={training ? backendWords(backend, device).detail : undefined}
        />
        <Card label={terms.samplesWaiting} value={finite(training?.samplesWaiting) ?? "—"} />
        <Card label={terms.judgeQueue} value={(training ? judgeQueueOf(training) : null) ?? "—"} />
        <Card label={terms.serving} value={serving} />
        <Card label={terms.lastSwap} value={swapMs !== null ? `${Math.round(swapMs)} ms` : "—"} />
      </div>
      {training && (loss !== null || training.restarts || training.trainerMemory) ? (
        <p className="small muted" aria-label="Trainer">
          {loss !== null ? `${terms.loss.label} (${terms.loss.term}) ${Number(loss.toPrecision(3))}. ` : ""}
          {training.trainerMemory
            ? `The trainer holds ${fmtBytes(training.trainerMemory.rssBytes)} of memory (the model and adapter ${fmtBytes(training.trainerMemory.tensorBytes)}${training.trainerMemory.passCacheBytes ? `, scores kept for the next cycles ${fmtBytes(training.trainerMemory.passCacheBytes)}` : ""}). `
            : ""}
          {training.restarts ? `The trainer restarted ${training.restarts} time${training.restarts === 1 ? "" : "s"}.` : ""}
        </p>
      ) : null}
      {training?.progress ? <PhaseProgress progress={training.progress} /> : null}
      {memory && !memory.fits ? (
        <div className="note note-error note-block" role="alert" aria-label="Learning is off">
          <strong>Learning is off for this model.</strong> Chat keeps working with the model as it is, but it cannot be trained on this machine: it needs{" "}
          {memoryNeed(memoryNeedOf(memory), backend)}. A smaller model, or a machine with a GPU, can learn.
          <div className="small">{memory.summary}</div>
        </div>
      ) : training?.lastError ? (
        <ErrorNote error={`Last training error: ${training.lastError}`} />
      ) : null}
      {training?.lastRevert ? <RevertNotice revert={training.lastRevert} /> : null}
      {watch ? (
        <p className="small muted" aria-label="Watch on the served adapter">
          Watching ckpt-{watch.checkpoint} against {watch.parent === null ? "the base model" : `ckpt-${watch.parent}`}: {watch.reward.child.n} rated turn
          {watch.reward.child.n === 1 ? "" : "s"} so far
          {watch.reward.child.mean !== null && watch.reward.parent.mean !== null
            ? ` (mean reward ${signed(watch.reward.child.mean)} vs ${signed(watch.reward.parent.mean)})`
            : ""}
          . If its answers turn out clearly worse, the learner rolls back by itself.
        </p>
      ) : null}
      {memory?.fits && memory.maxContext < memory.requestedMaxContext ? (
        <p className="small muted">
          Memory limits training to the last {memory.maxContext} tokens of each conversation (asked {memory.requestedMaxContext}).
        </p>
      ) : null}
    </>
  );
}

const signed = (x: number) => `${x > 0 ? "+" : x < 0 ? "−" : ""}${Math.abs(x).toFixed(2)}`;

/** The learner rolled a checkpoint back by itself: what, to what, and why. */
function RevertNotice({ revert }: { revert: RevertView & { checkpoint: number } }) {
  const at = epochOf(revert.at);
  return (
    <div className="note note-warn note-block" role="status" aria-label="Rolled back">
      <strong>
        Rolled back ckpt-{revert.checkpoint} to {revert.to === null ? "the base model" : `ckpt-${revert.to}`} by itself
      </strong>
      {at !== null ? ` (${fmtTime(at)})` : ""}: {revert.reason}. The checkpoint and what it was trained on are kept; learning goes on from{" "}
      {revert.to === null ? "the base model" : `ckpt-${revert.to}`}.
    </div>
  );
}

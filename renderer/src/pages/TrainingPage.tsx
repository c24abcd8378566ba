import { useState } from "react";
import { ApiError, messageOf } from "../api/client.js";
import { useCore, useLive } from "../api/core.js";
import { metricSeries, readCheckpoints, readTraining, readTurn, type MetricPoint, type RevertNote, type TrainingStatus, type Turn } from "../api/shapes.js";
import type { PhaseProgressView, TrainingReply } from "../../../electron/core/api/training.js";
import type { PreferencesReply } from "../../../electron/core/api/preferences.js";
import { LineChart, VerdictStrip } from "../components/Charts.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { adapterLabel, fmtBytes, fmtTime } from "../components/format.js";
import { memoryNeed } from "../components/Trainability.js";
import { EvalReportSection } from "./EvalReportSection.js";
import { DataTable } from "../components/DataTable.js";
import { backendWords, engineName, termTitle, terms, votesWords, type Term } from "../components/terms.js";
import "../components/terms.css";

/** "Training step 3 of 8 · about 4 min left", "Checking the new adapter · about 2 min left", "Idle" … */
export function describeTraining(t: TrainingStatus): string {
  const s = t.state.toLowerCase();
  if (t.paused) return "Paused";
  // The trainer's memory plan refused the served model: not a fault, the model is too large here.
  if (t.memory && !t.memory.fits && !s.includes("train")) return "Learning off";
  const p = t.progress;
  if (s.includes("train")) {
    if (t.step === null || t.steps === null) return "Training";
    // The time left at the rate of this run so far, else from the last run's step time.
    const left = timeLeft(p?.part === "steps" && p.secondsLeft !== null ? p.secondsLeft : t.stepSeconds !== null ? (t.steps - t.step) * t.stepSeconds : null);
    return `Training step ${Math.min(t.steps, t.step + 1)} of ${t.steps}${left ? ` · ${left}` : ""}`;
  }
  const label = phaseLabels[s] ?? s.charAt(0).toUpperCase() + s.slice(1);
  const left = s === "evaluating" && p && p.part !== "steps" ? timeLeft(p.secondsLeft) : null;
  return `${label}${left ? ` · ${left}` : ""}`;
}

/** What each part of a run is doing, as the progress bar names it. */
const progressLabels: Record<PhaseProgressView["part"], string> = {
  steps: "Training progress",
  scores: "Checking how far the new adapter moved",
  answers: "Reading the new adapter's own answers",
};

/** The progress bar with its caption: "Training progress · 45%". */
function PhaseProgress({ progress }: { progress: PhaseProgressView }) {
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

export function TrainingPage() {
  const { client, status, reloadStatus } = useCore();
  // GET /api/training: the learner's detail (history, judged turns) when the core offers it; /api/status otherwise.
  // No model served yet (503 no_model): the status says what there is to say.
  const detail = useLive((c) => c.getJson("/api/training").catch((e: unknown) => (e instanceof ApiError && (e.notAvailable || e.code === "no_model") ? null : Promise.reject(e))), ["training", "judge", "checkpoint", "revert", "models"]);
  const checkpoints = useLive((c) => c.getJson("/api/checkpoints").then(readCheckpoints), ["checkpoint", "training"]);
  // Which judged turns' hints are preferences already (a judge's hint can be kept from its row).
  const prefs = useLive((c) => c.get<PreferencesReply>("/api/preferences").catch(() => null), ["preferences"]);
  const keptFrom = new Set((prefs.data?.preferences ?? []).flatMap((p) => p.turnIds));
  const [actionError, setActionError] = useState<string | null>(null);
  const [pending, setPending] = useState<string | null>(null);

  const training = detail.data?.training ? readTraining(detail.data.training) : status?.training ?? null;
  const series = metricSeries(checkpoints.data?.items ?? [], detail.data?.history);
  const judged = (detail.data?.recentJudged ?? []).map(readTurn);

  // A judge's hint the user accepts becomes a preference (source "judge"), from the next message on.
  const keep = async (turnId: string, text: string) => {
    setActionError(null);
    try {
      await client.post("/api/preferences", { text, turnId });
      prefs.reload();
    } catch (e) {
      setActionError(messageOf(e));
    }
  };

  const act = async (what: string, path: string) => {
    if (pending !== null) return;
    setPending(what);
    setActionError(null);
    try {
      await client.post(path);
      reloadStatus();
      detail.reload();
    } catch (e) {
      setActionError(e instanceof ApiError && e.notAvailable ? `${what}: not offered by ${engineName} (it runs without learning).` : messageOf(e));
    } finally {
      setPending(null);
    }
  };

  return (
    <div className="page">
      <header className="page-head">
        <h1>Training</h1>
        <div className="actions">
          <button type="button" className="primary" aria-disabled={pending !== null} onClick={() => void act("Train now", "/api/training/run")}>
            {pending === "Train now" ? "Starting…" : "Train now"}
          </button>
          {training?.paused ? (
            <button type="button" aria-disabled={pending !== null} onClick={() => void act("Resume", "/api/training/resume")}>
              Resume
            </button>
          ) : (
            <button type="button" aria-disabled={pending !== null} onClick={() => void act("Pause", "/api/training/pause")}>
              Pause
            </button>
          )}
        </div>
      </header>
      {actionError && <ErrorNote error={actionError} />}
      {detail.error && <LoadProblem error={detail.error} what="Training detail" onRetry={detail.reload} />}
      <div className="cards" role="group" aria-label="Learner">
        <Card label={terms.now} value={training ? describeTraining(training) : "—"} live />
        <Card label={terms.backend} value={training ? backendWords(training.backend, training.device).text : "—"} detail={training ? backendWords(training.backend, training.device).detail : undefined} />
        <Card label={terms.samplesWaiting} value={training?.samplesWaiting ?? "—"} />
        <Card label={terms.judgeQueue} value={training?.judgeQueue ?? "—"} />
        <Card label={terms.serving} value={status ? adapterLabel(status.adapter) : "—"} />
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

      <h2>Over time</h2>
      {checkpoints.error && <LoadProblem error={checkpoints.error} what="Training history (checkpoints)" onRetry={checkpoints.reload} />}
      {series.length === 0 ? (
        <p className="muted">
          No lessons yet. After the first one, charts show how well answers were rated, the training error, how much each lesson changed the answers, how far the assistant
          moved from the original model, and each safety check's verdict: one point per new version.
        </p>
      ) : (
        <div className="charts">
          <LineChart title={termTitle(terms.meanReward)} values={series.map((p) => p.meanReward)} color="var(--c-green)" />
          <LineChart title={termTitle(terms.loss)} values={series.map((p) => p.loss)} color="var(--c-blue)" />
          <LineChart title={termTitle(terms.klServing)} values={series.map((p) => p.kl)} color="var(--c-orange)" />
          <LineChart
            title={termTitle(terms.drift)}
            label="recent prompts"
            values={series.map((p) => p.klToBase)}
            color="var(--c-blue)"
            extra={series.some((p) => p.klToBaseHeldBack !== null) ? { label: terms.heldBackTurns.label, values: series.map((p) => p.klToBaseHeldBack), color: "var(--c-orange)" } : undefined}
            limit={driftLimit(series)}
          />
          <VerdictStrip verdicts={series.map((p) => p.verdict)} />
        </div>
      )}

      <EvalReportSection />

      <h2>Latest judged turns</h2>
      {judged.length === 0 ? (
        <p className="muted">No judged turns yet. Turns are judged from your next message, or rated by your thumbs and hints.</p>
      ) : (
        <DataTable columns={["When", "Question", "Answer", "Judges", "Rating", "Hint"]}>
          {judged.map((t) => (
            <tr key={t.id}>
              <td className="nowrap">{fmtTime(t.at)}</td>
              <td className="clip" title={t.userText}>
                {t.userText || "—"}
              </td>
              <td className="clip" title={t.response}>
                {t.response || "—"}
              </td>
              <td>
                <Votes turn={t} />
              </td>
              <td title="reward">{t.reward === null ? "—" : t.reward > 0 ? `+${t.reward}` : t.reward < 0 ? `−${-t.reward}` : "0"}</td>
              <td className="wrap-cell">
                {t.hint ?? t.judgeHints[0] ?? "—"}
                {t.hint === null && t.judgeHints.length > 0 && (
                  <div className="small">
                    {keptFrom.has(t.id) ? (
                      <span className="muted">
                        Kept as a <a href="#/preferences">preference</a>
                      </span>
                    ) : (
                      <button type="button" className="link small" aria-label={`Keep “${t.judgeHints[0]}” as a preference`} onClick={() => void keep(t.id, t.judgeHints[0])}>
                        Keep as preference
                      </button>
                    )}
                  </div>
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </div>
  );
}

/** The gate's drift budget (the newest candidate's), drawn as the chart's limit. */
function driftLimit(series: MetricPoint[]): { value: number; label: string } | null {
  const b = [...series].reverse().find((p) => p.driftBudget !== null)?.driftBudget ?? null;
  return b === null ? null : { value: b, label: terms.driftBudget.label };
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

/** The judges' votes in words ("2 bad, 1 no verdict") with the exact votes in a tooltip, and the user's thumbs, which override them. */
function Votes({ turn }: { turn: Turn }) {
  const scores = turn.votes.map((v) => v.score);
  const words = votesWords(scores);
  const exact = scores.map((v) => (v === null ? "no verdict" : v > 0 ? "+1" : v < 0 ? "−1" : "0")).join(" ");
  const thumbs = turn.thumbs ? `you: thumbs ${turn.thumbs}` : "";
  if (!words.text && !thumbs) return <>—</>;
  return (
    <>
      {words.text && (
        <span aria-label={words.label} title={`Judge votes: ${exact}`}>
          {words.text}
        </span>
      )}
      {words.text && thumbs ? " · " : ""}
      {thumbs}
    </>
  );
}

/**
 * A labelled figure; `wide` for long values such as a model's file name (two grid columns). A
 * `Term` label shows its exact term as the label's tooltip; `detail` is a small line under the value.
 */
export function Card({ label, value, live, wide, detail }: { label: string | Term; value: string | number; live?: boolean; wide?: boolean; detail?: string }) {
  const text = typeof label === "string" ? label : label.label;
  return (
    <div className={wide ? "card card-wide" : "card"}>
      <div className="card-label" title={typeof label === "string" ? undefined : label.term}>
        {text}
      </div>
      <div className="card-value" aria-live={live ? "polite" : undefined}>
        {value}
      </div>
      {detail && <div className="term-detail">{detail}</div>}
    </div>
  );
}

import { useCore } from "../api/core.js";
import { ErrorNote, LoadProblem } from "../components/Notices.js";
import { adapterLabel } from "../components/format.js";
import { isPaused } from "../format/training.js";
import { EvalReportSection } from "./EvalReportSection.js";
import { useTrainingData } from "./training/useTrainingData.js";
import { useTrainingActions } from "./training/useTrainingActions.js";
import { LearnerStatus } from "./training/LearnerStatus.js";
import { OverTimeCharts } from "./training/OverTimeCharts.js";
import { JudgedTurnsTable } from "./training/JudgedTurnsTable.js";
import "../components/terms.css";

export { describeTraining, timeLeft } from "./training/describeTraining.js";

export function TrainingPage() {
  const { status } = useCore();
  const { detail, checkpoints, prefs, keptFrom, training, series, judged } = useTrainingData();
  const { actionError, pending, keep, act } = useTrainingActions({ onActed: detail.reload, onKept: prefs.reload });

  return (
    <div className="page">
      <header className="page-head">
        <h1>Training</h1>
        <div className="actions">
          <button type="button" className="primary" aria-disabled={pending !== null} onClick={() => void act("Train now", "/api/training/run")}>
            {pending === "Train now" ? "Starting…" : "Train now"}
          </button>
          {training && isPaused(training) ? (
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
      <LearnerStatus training={training} serving={status ? adapterLabel(status.adapter) : "—"} />

      <h2>Over time</h2>
      {checkpoints.error && <LoadProblem error={checkpoints.error} what="Training history (checkpoints)" onRetry={checkpoints.reload} />}
      <OverTimeCharts series={series} />

      <EvalReportSection />

      <h2>Latest judged turns</h2>
      <JudgedTurnsTable judged={judged} keptFrom={keptFrom} onKeep={(id, text) => void keep(id, text)} />
    </div>
  );
}

import type { ModelView, TrainabilityView } from "../../../../electron/core/api/models.js";
import { Card } from "../../components/Card.js";
import { fmtBytes } from "../../components/format.js";
import { modelName } from "../../format/models.js";
import { memoryNeed } from "../../components/Trainability.js";

/** The active model's "Training here" card: a few words (the note below it says what is short). */
function trainingCard(t: TrainabilityView | null): string {
  if (!t) return "—";
  if (t.fits) return `Yes · ${t.backend} · context ${t.maxContext.toLocaleString()}`;
  return t.limit === "architecture" ? "Serve only" : "Too large";
}

/** "Active model": the served model's figures, and a note when it cannot be trained here. */
export function ActiveModel({
  active,
  servedTraining,
  backend,
}: {
  active: ModelView | null;
  servedTraining: TrainabilityView | null;
  backend: string | null | undefined;
}) {
  return (
    <>
      <h2>Active model</h2>
      {active ? (
        <div className="cards">
          <Card label="Name" value={modelName(active)} wide />
          <Card label="Size" value={fmtBytes(active.sizeBytes)} />
          <Card label="Quantization" value={active.quantization ?? "—"} />
          <Card label="Context" value={active.contextSize ? `${active.contextSize.toLocaleString()} tokens` : "—"} />
          <Card label="GPU layers" value={active.gpuLayers ?? (backend ? `— (${backend})` : "—")} />
          <Card label="Training here" value={trainingCard(servedTraining)} wide />
        </div>
      ) : (
        <p className="muted">No model loaded.</p>
      )}
      {active && servedTraining?.limit === "memory" ? (
        <p className="note note-muted" role="status">
          Too large to train here: learning needs {memoryNeed(servedTraining, servedTraining.backend)}. Chat works with the model as it is; a smaller model, or
          a machine with a GPU, can learn.
        </p>
      ) : active && (servedTraining?.limit === "architecture" || active.trainable === false) ? (
        <p className="note note-muted">This model's architecture can be served but not trained.</p>
      ) : null}
    </>
  );
}

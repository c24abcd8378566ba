/**
 * Training replies: GET /api/checkpoints, GET /api/training, POST /api/training/run|pause|resume,
 * POST /api/checkpoints/:n/activate|pin, and the `training` SSE event's status.
 */

/** The trainer's memory plan for the served model (trainer/protocol.ts memoryPlanSchema). */
export interface MemoryPlanView {
  fits: boolean;
  /** tfjs backend the plan is for ("wasm", "webgpu", ...) */
  backend: string;
  summary: string;
  maxContext: number;
  requestedMaxContext: number;
  maxContextThatFits: number;
  needDeviceBytes: number;
  availableDeviceBytes?: number;
  needHostBytes: number;
  availableHostBytes: number;
}

/** One side of the watch's comparison (training/serveWatch.ts SideStats). */
export interface WatchSideView {
  n: number;
  mean: number | null;
}

/** The watch on the served checkpoint against its parent (training/serveWatch.ts WatchStatus). */
export interface WatchView {
  checkpoint: number;
  version: string;
  /** null: the base model */
  parent: number | null;
  parentVersion: string;
  since: string;
  reward: { child: WatchSideView; parent: WatchSideView };
  checkedAt: string | null;
}

/** A rollback the watch made by itself. */
export interface RevertView {
  at: string;
  reason: string;
  rule: "reward" | "fluency" | "ancestor";
  /** the checkpoint served instead (null: the base model) */
  to: number | null;
}

export type TrainingPhase = "starting" | "idle" | "training" | "evaluating" | "publishing" | "paused" | "restarting" | "error";

/**
 * How far the part of a run in progress is: at a real size on a CPU each takes minutes. "steps":
 * the run's training steps (counted inside a step by its block passes); "scores": the gate's KL
 * and log-prob passes in the trainer; "answers": the gate's fluency probe (the candidate's own
 * answers sampled with llama.cpp and scored by the base model).
 */
export interface PhaseProgressView {
  part: "steps" | "scores" | "answers";
  /** 0..1 of this part */
  fraction: number;
  /** at the rate so far; null until something is done */
  secondsLeft: number | null;
}

/** What the trainer process holds, measured once it has loaded the model and after each run (its `memory` command). */
export interface TrainerMemoryView {
  /** the process's resident memory */
  rssBytes: number;
  /** its tensors: the base model as placed, the adapter, the optimizer's moments (flat over cycles: a leak shows here) */
  tensorBytes: number;
  /** the pass cache's rows besides (trainer/train/passCache.ts: bounded, kept between cycles); absent from a trainer that predates it */
  passCacheBytes?: number;
  /** the wasm backend's heap (it grows, never shrinks); null on other backends */
  wasmHeapBytes: number | null;
  at: string;
}

/** The learning loop's live status (training/supervisor.ts TrainingLiveStatus). */
export interface TrainingStatusView {
  state: TrainingPhase;
  paused: boolean;
  /** step i of n of the run in progress */
  step: number | null;
  steps: number | null;
  /**
   * Wall seconds a training step takes here: the mean of the run in progress's steps so far,
   * else the last run's (null before the first step). The UI says the time left from it.
   */
  stepSeconds: number | null;
  /** how far the part in progress is (training, evaluating); null otherwise */
  progress: PhaseProgressView | null;
  loss: number | null;
  runId: string | null;
  samplesWaiting: number;
  batchSize: number;
  backend: string | null;
  device: string | null;
  memory: MemoryPlanView | null;
  activeCheckpoint: number | null;
  lastError: string | null;
  /** learning-rate multiplier (training/trainOptions.ts) */
  lrScale: number;
  lastSwap: { pauseMs: number; version: string; at: string } | null;
  trainerPid: number | null;
  /** measured once loaded and after each run: a trainer that grows run after run shows here; null before */
  trainerMemory: TrainerMemoryView | null;
  restarts: number;
  watch: WatchView | null;
  lastRevert: (RevertView & { checkpoint: number }) | null;
}

export type CheckpointVerdict = "published" | "rejected" | "reverted";

/** A checkpoint as GET /api/checkpoints lists it (server/routes/training.ts checkpointView). */
export interface CheckpointView {
  n: number;
  version: string;
  /** made by importing an adapter trained elsewhere, not by the trainer */
  imported: boolean;
  /** file name of the base model it was trained on (null: made before the app recorded it) */
  model: string | null;
  /** it can be served now: trained on the model served now (or not known otherwise) */
  forServedModel: boolean;
  createdAt: string;
  parent: number | null;
  samples: number;
  meanReward: number | null;
  loss: number;
  kl: number | null;
  verdict: CheckpointVerdict;
  /** the publish gate's figures and reasons */
  gate: { verdict: string; reasons: string[]; klToBase?: { recent: number | null; heldBack: number | null } | null };
  /** why and when the watch rolled it back (verdict "reverted"), else null */
  reverted: RevertView | null;
  /** drift from the base model when it was made */
  klToBase: { recent: number | null; heldBack: number | null } | null;
  /** the gate's fluency figures */
  fluency: { candidate: number | null; base: number | null } | null;
  totalSteps: number;
  swapPauseMs: number | null;
  pinned: boolean;
  active: boolean;
}

export interface CheckpointsReply {
  /** newest first */
  checkpoints: CheckpointView[];
  /** "ckpt-N" of the one served, null: the base model */
  active: string | null;
}

/** One point of GET /api/training's history: a candidate, in time order. */
export interface TrainingHistoryPoint {
  n: number;
  at: string;
  meanReward: number | null;
  loss: number;
  kl: number | null;
  klToBase: number | null;
  klToBaseHeldBack: number | null;
  driftBudget: number | null;
  fluency: number | null;
  fluencyBase: number | null;
  verdict: CheckpointVerdict;
  swapPauseMs: number | null;
}

export interface TrainingReply<Turn = unknown> {
  /** the live status with the judge's queue (null without a judge) */
  training: TrainingStatusView & { judgeQueue: number | null };
  history: TrainingHistoryPoint[];
  /** the newest judged turns, newest first (GET /api/sessions/:id's turn shape) */
  recentJudged: Turn[];
}

/** POST /api/training/run: 202 started; 200 while a run holds every ready sample. */
export type RunNowReply =
  { started: true; samplesWaiting: number } | { started: false; running: true; reason: string | null; samplesWaiting: number; training: TrainingStatusView };

export interface SwapView {
  pauseMs: number;
  drained: boolean;
  version: string;
}

/** POST /api/checkpoints/:n/activate */
export interface ActivateReply {
  /** null: the base model is served, with no adapter (POST /api/checkpoints/base/activate) */
  checkpoint: CheckpointView | null;
  swap: SwapView;
}

/** What an imported adapter held (adapters/importAdapter.ts ImportSummary). */
export interface ImportedAdapterView {
  format: "gguf" | "peft";
  /** the path given */
  source: string;
  rank: number;
  alpha: number;
  /** adapted (layer, linear) pairs */
  pairs: number;
  layers: number;
  targets: string[];
  dtypes: string[];
  /** adapter_config.json's base_model_name_or_path (peft) */
  baseModel: string | null;
  warnings: string[];
}

/** POST /api/checkpoints/import: the checkpoint made (published and served, or rejected and kept). */
export interface ImportReply {
  checkpoint: CheckpointView;
  imported: ImportedAdapterView;
  /** the swap that put it in service; null when the gate rejected it */
  swap: SwapView | null;
}

/**
 * A checkpoint as the index stores it (training/checkpoints.ts CheckpointEntry): what the
 * `checkpoint` event carries. The UI reads the checkpoints through GET /api/checkpoints
 * (CheckpointView); the event is its cue to read them again.
 */
export interface CheckpointEntryView {
  id: number;
  /** adapter version as served */
  version: string;
  createdAt: string;
  parent: number | null;
  /** the adapter file and the checkpoint's folder */
  path: string;
  dir: string;
  verdict: CheckpointVerdict;
  reverted?: RevertView;
  pinned: boolean;
  runId: string;
  /** turn ids of the samples it was trained on */
  sampleIds: string[];
  samples: number;
  meanReward: number | null;
  loss: number;
  kl: number | null;
  gate: CheckpointView["gate"];
  totalSteps: number;
  swapPauseMs: number | null;
  sha256: { adapter: string; optimizer: string };
  /** file name of the base model it was trained on; absent on checkpoints made before it was recorded */
  model?: string;
}

/** `checkpoint` event: a checkpoint made or changed (published, rejected, pinned, reverted). */
export interface CheckpointEvent {
  checkpoint: CheckpointEntryView;
}

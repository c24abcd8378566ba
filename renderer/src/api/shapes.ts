// What the pages show of the core's replies: each reader takes a reply as the core's contract
// types it (electron/core/api/, imported as types only; CoreClient.getJson types a reply from its
// path) and derives what a page displays from it: times as epoch ms, a turn's user text and
// speed, a checkpoint's revert reason, a model's display name. The contract's own types are used
// as they are wherever a page shows a field unchanged (TrainabilityView, DownloadView, Settings).
import type { CheckpointsReply, CheckpointVerdict, MemoryPlanView, PhaseProgressView, RevertView, TrainerMemoryView, TrainingHistoryPoint, TrainingStatusView, WatchView } from "../../../electron/core/api/training.js";
import type { DownloadView, InstalledModelView, ModelsEvent, ModelsReply, ModelSwitchEvent, ModelView, TrainabilityView } from "../../../electron/core/api/models.js";
import type { AnswerTimingsView, GenerationView, SessionReply, SessionsReply, TurnView } from "../../../electron/core/api/sessions.js";
import { messageText } from "../../../electron/core/api/chatTypes.js";
import type { LlamaTimings } from "../../../electron/core/api/openai.js";
import type { StatusReply } from "../../../electron/core/api/status.js";
import type { Settings as CoreSettings } from "../../../electron/core/api/settings.js";

/** A finite number, else null (a figure the core leaves out or sends as null shows "—"). */
const num = (v: number | null | undefined): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** ISO time (the core's) to epoch ms; null when absent or unreadable. */
function time(v: string | null | undefined): number | null {
  if (!v) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}

export interface ModelInfo {
  name: string;
  path: string | null;
  sizeBytes: number | null;
  quantization: string | null;
  contextSize: number | null;
  gpuLayers: number | null;
  arch: string | null;
  trainable: boolean | null;
  /** Whether it trains on this machine (GET /api/models), null when not known. */
  training: TrainabilityView | null;
}

/** The served model's verdict from the trainer's own, live plan (/api/status training.memory). */
export function trainabilityOfMemory(m: TrainingMemory, backend: string): TrainabilityView {
  return { ...m, backend, maxContext: m.fits ? m.maxContext : 0, limit: m.fits ? null : "memory", weights: null };
}

/** A model as GET /api/models lists it, or /api/status's served model (which has no architecture or verdict). */
type ModelLike = Partial<ModelView> & Pick<ModelView, "id">;

function readModel(m: ModelLike | null | undefined): ModelInfo | null {
  if (!m) return null;
  const path = m.path ?? null;
  return {
    name: m.name ?? (path ? path.split(/[\\/]/).pop()! : m.id),
    path,
    sizeBytes: num(m.sizeBytes),
    quantization: m.quantization ?? null,
    contextSize: num(m.contextSize),
    gpuLayers: num(m.gpuLayers),
    arch: m.architecture ?? null,
    trainable: m.trainable ?? null,
    training: m.training ?? null,
  };
}

export interface TrainingStatus {
  /** idle | training | evaluating | publishing | paused | … as the core says it. */
  state: string;
  step: number | null;
  steps: number | null;
  /** seconds a training step takes here (this run's mean so far, else the last run's) */
  stepSeconds: number | null;
  /** how far the part of the run in progress is (the steps, the gate's scoring, its sampled answers) */
  progress: PhaseProgressView | null;
  samplesWaiting: number | null;
  judgeQueue: number | null;
  backend: string | null;
  device: string | null;
  paused: boolean;
  lastError: string | null;
  /** checkpoint number being served; null = base model */
  activeCheckpoint: number | null;
  /** the last adapter swap: how long new requests waited */
  lastSwapMs: number | null;
  loss: number | null;
  restarts: number | null;
  /** The trainer's memory plan for the served model (null until the trainer has started once). */
  memory: TrainingMemory | null;
  /** The latest rollback the learner made by itself (the watch on what is served), or null. */
  lastRevert: RevertNote | null;
  /** The checkpoint the watch compares with the one it replaced, or null. */
  watch: WatchNote | null;
  /** What the trainer process holds (measured once loaded and after each run; null before). */
  trainerMemory: TrainerMemoryView | null;
}

export interface RevertNote {
  checkpoint: number;
  /** the checkpoint served instead; null = the base model */
  to: number | null;
  reason: string;
  at: number | null;
}

export interface WatchNote {
  checkpoint: number;
  parent: number | null;
  /** rated turns of each so far, and their mean reward */
  rated: number;
  parentRated: number;
  meanReward: number | null;
  parentMeanReward: number | null;
}

function readRevert(r: (RevertView & { checkpoint: number }) | null | undefined): RevertNote | null {
  if (!r) return null;
  return { checkpoint: r.checkpoint, to: r.to, reason: r.reason, at: time(r.at) };
}

function readWatch(w: WatchView | null | undefined): WatchNote | null {
  if (!w) return null;
  return { checkpoint: w.checkpoint, parent: w.parent, rated: w.reward.child.n, parentRated: w.reward.parent.n, meanReward: w.reward.child.mean, parentMeanReward: w.reward.parent.mean };
}

/** What the trainer's memory plan decided (core: trainer/protocol.ts memoryPlanSchema). */
export type TrainingMemory = Omit<MemoryPlanView, "backend" | "availableDeviceBytes"> & { availableDeviceBytes: number | null };

function readMemory(m: MemoryPlanView | null | undefined): TrainingMemory | null {
  if (!m) return null;
  const { backend: _backend, ...plan } = m;
  return { ...plan, availableDeviceBytes: num(m.availableDeviceBytes) };
}

/**
 * The learning loop's status: GET /api/training's `training`, or /api/status's (the stored
 * status alone when learning is off: its live fields are absent, and read as null).
 */
export function readTraining(t: StatusReply["training"] | TrainingStatusView): TrainingStatus {
  const state = t.state;
  return {
    state,
    step: num(t.step),
    steps: num(t.steps),
    stepSeconds: num(t.stepSeconds),
    progress: t.progress ?? null,
    samplesWaiting: num(t.samplesWaiting),
    judgeQueue: "judgeQueue" in t ? num(t.judgeQueue) : null,
    backend: t.backend ?? null,
    device: t.device ?? null,
    paused: t.paused === true || state === "paused",
    lastError: t.lastError ?? null,
    activeCheckpoint: num(t.activeCheckpoint),
    lastSwapMs: num(t.lastSwap?.pauseMs),
    loss: num(t.loss),
    restarts: num(t.restarts),
    memory: readMemory(t.memory),
    lastRevert: readRevert(t.lastRevert),
    watch: readWatch(t.watch),
    trainerMemory: t.trainerMemory ?? null,
  };
}

export interface CoreStatus {
  model: ModelInfo | null;
  /** Inference backend: cuda / vulkan / cpu … */
  backend: string | null;
  gpu: string | null;
  adapter: string;
  training: TrainingStatus;
}

export function readStatus(s: StatusReply): CoreStatus {
  const model = readModel(s.model);
  if (model && model.gpuLayers === null) model.gpuLayers = num(s.gpu?.layers);
  return { model, backend: s.backend, gpu: s.gpu?.name ?? null, adapter: s.adapter, training: readTraining(s.training) };
}

export interface SessionSummary {
  id: string;
  title: string;
  updatedAt: number | null;
  turnCount: number | null;
  /** "ui" (our chat) or "outside" (an API client such as OpenClaw) */
  source: SessionsReply["sessions"][number]["source"];
}

/** GET /api/sessions, most recently active first. */
export function readSessions(r: SessionsReply): SessionSummary[] {
  return r.sessions
    .map((s) => ({ id: s.id, title: s.title ?? "", updatedAt: time(s.lastActivityAt), turnCount: num(s.turnCount), source: s.source }))
    .filter((s) => s.id)
    .sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0));
}

export type Thumbs = "up" | "down" | null;

export interface Vote {
  score: number | null;
  text: string | null;
}

/** How fast an answer was written: from a recorded turn's timings, or a stream's last chunk. */
export interface AnswerSpeed {
  /** answer tokens */
  tokens: number;
  /** after the first token; null for a one-token answer */
  tokensPerSecond: number | null;
  /** the prompt's evaluation up to the first token */
  firstTokenSeconds: number;
}

export function speedOfTimings(t: AnswerTimingsView | undefined): AnswerSpeed | null {
  if (!t) return null;
  return { tokens: t.decodeTokens + 1, tokensPerSecond: t.decodeTokens > 0 && t.decodeMs > 0 ? (1000 * t.decodeTokens) / t.decodeMs : null, firstTokenSeconds: t.firstTokenMs / 1000 };
}

/** The same from the wire's llama-server-style timings (api/openai.ts LlamaTimings). */
export function speedOfLlamaTimings(t: LlamaTimings): AnswerSpeed {
  return { tokens: t.predicted_n + 1, tokensPerSecond: t.predicted_per_second, firstTokenSeconds: t.prompt_ms / 1000 };
}

export interface Turn {
  id: string;
  type: string;
  /** The user's message this turn answered. */
  userText: string;
  /** Every prompt message (to rebuild the conversation). */
  messages: { role: string; content: string }[];
  response: string;
  adapter: string;
  /** the served model that wrote it */
  model: string | null;
  thumbs: Thumbs;
  hint: string | null;
  reward: number | null;
  votes: Vote[];
  judgeHints: string[];
  at: number | null;
  /** standing preferences the core added to its prompt */
  preferences: number;
  /** how fast it was written (null: recorded before the core measured it) */
  speed: AnswerSpeed | null;
}

/** A recorded turn (GET /api/sessions/:id's turns, GET /api/training's recentJudged). */
export function readTurn(t: TurnView): Turn {
  const messages = t.messages.map((m) => ({ role: m.role, content: messageText(m) }));
  // OpenClaw appends its internal context as a last user message: that is not what the user said.
  const lastUser = [...messages].reverse().find((m) => m.role === "user" && !m.content.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"));
  return {
    id: t.turnId,
    type: t.type,
    userText: lastUser?.content ?? "",
    messages,
    response: t.text,
    adapter: t.adapter,
    model: t.model ?? null,
    thumbs: t.feedback?.thumbs ?? null,
    hint: t.feedback?.hint ?? null,
    reward: num(t.reward),
    votes: (t.judge?.votes ?? []).map((v) => ({ score: num(v.score), text: v.text })),
    judgeHints: t.judge?.hints ?? [],
    at: time(t.time),
    preferences: t.preferences?.ids.length ?? 0,
    speed: speedOfTimings(t.timings),
  };
}

export interface SessionDetail {
  id: string;
  title: string;
  /** the chat's own generation settings; null: it follows the defaults */
  generation: GenerationView | null;
  turns: Turn[];
}

/** GET /api/sessions/:id */
export function readSession(s: SessionReply): SessionDetail {
  return { id: s.session.id, title: s.session.title ?? "", generation: s.session.generation ?? null, turns: s.turns.map(readTurn) };
}

export interface Checkpoint {
  n: number;
  version: string;
  at: number | null;
  samples: number | null;
  meanReward: number | null;
  loss: number | null;
  kl: number | null;
  verdict: CheckpointVerdict | null;
  active: boolean;
  pinned: boolean;
  /** made by importing an adapter trained elsewhere */
  imported: boolean;
  /** why the learner rolled it back by itself (verdict "reverted"), else null */
  revertReason: string | null;
  /** mean KL(checkpoint || base model) per token on recent prompts when it was made */
  klToBase: number | null;
  /** file name of the base model it was trained on (null: not recorded) */
  model: string | null;
  /** trained on the model served now, so it can be served */
  forServedModel: boolean;
}

/** GET /api/checkpoints (newest first). */
export function readCheckpoints(r: CheckpointsReply): { items: Checkpoint[]; active: string | null } {
  const items = r.checkpoints.map((c) => ({
    n: c.n,
    version: c.version,
    at: time(c.createdAt),
    samples: num(c.samples),
    meanReward: num(c.meanReward),
    loss: num(c.loss),
    kl: num(c.kl),
    verdict: c.verdict,
    active: c.active || r.active === c.version,
    pinned: c.pinned,
    imported: c.imported,
    revertReason: c.reverted?.reason ?? null,
    klToBase: num(c.klToBase?.recent),
    model: c.model,
    forServedModel: c.forServedModel,
  }));
  return { items, active: r.active };
}

export interface MetricPoint {
  at: number | null;
  meanReward: number | null;
  loss: number | null;
  kl: number | null;
  /** drift: mean KL(candidate || base model) per token on recent prompts, and on held-back turns */
  klToBase: number | null;
  klToBaseHeldBack: number | null;
  /** the gate's budget for it */
  driftBudget: number | null;
  verdict: CheckpointVerdict | null;
}

/** Points for the training charts: GET /api/training's history, else the checkpoints (published or rejected candidates) in time order. */
export function metricSeries(checkpoints: Checkpoint[], history: TrainingHistoryPoint[] | null | undefined): MetricPoint[] {
  if (history?.length) {
    return history.map((h) => ({
      at: time(h.at),
      meanReward: num(h.meanReward),
      loss: num(h.loss),
      kl: num(h.kl),
      klToBase: num(h.klToBase),
      klToBaseHeldBack: num(h.klToBaseHeldBack),
      driftBudget: num(h.driftBudget),
      verdict: h.verdict,
    }));
  }
  return [...checkpoints]
    .sort((a, b) => a.n - b.n)
    .map((c) => ({ at: c.at, meanReward: c.meanReward, loss: c.loss, kl: c.kl, klToBase: c.klToBase, klToBaseHeldBack: null, driftBudget: null, verdict: c.verdict }));
}

export interface CatalogEntry {
  id: string;
  name: string;
  sizeBytes: number | null;
  arch: string | null;
  license: string | null;
  installed: boolean;
  download: DownloadView | null;
  recommended: boolean;
  quantization: string | null;
  notes: string | null;
  serveMemoryBytes: number | null;
  /** Whether it would train on this machine (the trainer's memory plan for its shape). */
  training: TrainabilityView | null;
}

export interface ModelsView {
  active: ModelInfo | null;
  catalog: CatalogEntry[];
  /** downloaded or imported models (ids usable with "use") */
  installed: (ModelInfo & { id: string; origin: InstalledModelView["origin"] })[];
  recommendation: string | null;
  restartRequired: boolean;
}

/** GET /api/models */
export function readModels(r: ModelsReply): ModelsView {
  return {
    active: readModel(r.active),
    catalog: r.catalog.map((m) => ({
      id: m.id,
      name: m.name,
      sizeBytes: num(m.sizeBytes),
      arch: m.architecture,
      license: m.license,
      installed: m.installed,
      download: m.download,
      recommended: m.recommended,
      quantization: m.quantization,
      notes: m.notes,
      serveMemoryBytes: num(m.serveMemoryBytes),
      training: m.training,
    })),
    installed: r.installed.map((m) => ({ ...readModel(m)!, id: m.id, origin: m.origin })),
    recommendation: r.recommendation.reason,
    restartRequired: r.restartRequired,
  };
}

/** Where the judge runs: the served model without its adapter, another GGUF, or an OpenAI-compatible endpoint. */
export type JudgeSource = CoreSettings["judgeSource"];

/** The settings the UI edits (the core's schema: electron/core/store/settings.ts); others are left alone. */
export type Settings = Pick<
  CoreSettings,
  "learningMethod" | "batchSize" | "learningRate" | "loraRank" | "teacherSource" | "judgeVotes" | "judgeSource" | "autoLearn" | "outsideDefaultTurnType" | "headerlessTurnsMain" | "klBeta" | "heldBackShare" | "embeddingModelPath"
>;

/**
 * The fields the form edits of GET /api/settings's reply (the core sends them all, with the
 * defaults of its schema, store/settings.ts: the form waits for this reply instead of showing
 * values of its own).
 */
export function readSettings(s: CoreSettings): Settings {
  return {
    learningMethod: s.learningMethod,
    batchSize: s.batchSize,
    learningRate: s.learningRate,
    loraRank: s.loraRank,
    teacherSource: s.teacherSource,
    judgeVotes: s.judgeVotes,
    judgeSource: s.judgeSource,
    autoLearn: s.autoLearn,
    outsideDefaultTurnType: s.outsideDefaultTurnType,
    headerlessTurnsMain: s.headerlessTurnsMain,
    klBeta: s.klBeta,
    heldBackShare: s.heldBackShare,
    embeddingModelPath: s.embeddingModelPath,
  };
}

/** A model switch as the picker follows it (the `models` event's ModelSwitchEvent). */
export interface ModelSwitch {
  name: string;
  state: ModelSwitchEvent["state"];
  /** share of the weights loaded, while loading */
  progress: number | null;
  /** failed: why (the previous model is served again) */
  error: string | null;
}

/** A `models` event that moves a switch on; null for the event's other changes. */
export function readModelSwitch(e: ModelsEvent): ModelSwitch | null {
  if (e.change !== "switch") return null;
  return { name: e.name, state: e.state, progress: e.progress ?? null, error: e.error ?? null };
}

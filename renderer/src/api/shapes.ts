// The core's replies as the pages use them. Their shapes are the core's contract
// (electron/core/api/, imported as types only): a field read here that the core does not send
// is a compile error. What stays untrusted is the JSON itself: a reply is cast to its contract
// type once (`fromCore`), and a field the contract marks optional, or a core older than this UI,
// reads as null (a page shows "—" instead of going blank).
import type { CheckpointsReply, CheckpointView, MemoryPlanView, PhaseProgressView, RevertView, TrainerMemoryView, TrainingHistoryPoint, TrainingStatusView, WatchView } from "../../../electron/core/api/training.js";
import type { DownloadView, ModelsReply, ModelSwitchEvent, ModelView, TrainabilityView } from "../../../electron/core/api/models.js";
import type { AnswerTimingsView, GenerationView, SessionReply, SessionsReply, TurnView } from "../../../electron/core/api/sessions.js";
import type { LlamaTimings } from "../../../electron/core/api/openai.js";
import type { StatusReply } from "../../../electron/core/api/status.js";
import type { Settings as CoreSettings } from "../../../electron/core/api/settings.js";

type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/**
 * A reply as its contract types it. The one unchecked step: the core and this UI ship together,
 * and every field read after it is checked against the contract at compile time.
 */
function fromCore<T>(body: unknown): Partial<T> {
  return (isObj(body) ? body : {}) as Partial<T>;
}

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
  training: Trainability | null;
}

/** Whether a model trains on this machine, and how (GET /api/models's `training` of each model). */
export type Trainability = TrainabilityView;

function readTrainability(t: TrainabilityView | null | undefined): Trainability | null {
  if (!t || typeof t.fits !== "boolean") return null;
  return {
    fits: t.fits,
    backend: t.backend ?? "wasm",
    maxContext: t.maxContext ?? 0,
    summary: t.summary ?? "",
    limit: t.fits ? null : t.limit === "architecture" ? "architecture" : "memory",
    needDeviceBytes: num(t.needDeviceBytes),
    availableDeviceBytes: num(t.availableDeviceBytes),
    needHostBytes: num(t.needHostBytes),
    availableHostBytes: num(t.availableHostBytes),
  };
}

/** The served model's verdict from the trainer's own, live plan (/api/status training.memory). */
export function trainabilityOfMemory(m: TrainingMemory, backend: string): Trainability {
  return { ...m, backend, maxContext: m.fits ? m.maxContext : 0, limit: m.fits ? null : "memory" };
}

type ModelLike = Partial<ModelView> & { name?: string };

function readModel(m: ModelLike | null | undefined): ModelInfo | null {
  if (!m) return null;
  const path = m.path ?? null;
  return {
    name: m.name ?? (path ? path.split(/[\\/]/).pop()! : (m.id ?? "model")),
    path,
    sizeBytes: num(m.sizeBytes),
    quantization: m.quantization ?? null,
    contextSize: num(m.contextSize),
    gpuLayers: num(m.gpuLayers),
    arch: m.architecture ?? null,
    trainable: typeof m.trainable === "boolean" ? m.trainable : null,
    training: readTrainability(m.training),
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
  return { checkpoint: r.checkpoint, to: r.to ?? null, reason: r.reason, at: time(r.at) };
}

function readWatch(w: WatchView | null | undefined): WatchNote | null {
  if (!w) return null;
  return {
    checkpoint: w.checkpoint,
    parent: w.parent ?? null,
    rated: w.reward?.child.n ?? 0,
    parentRated: w.reward?.parent.n ?? 0,
    meanReward: w.reward?.child.mean ?? null,
    parentMeanReward: w.reward?.parent.mean ?? null,
  };
}

/** What the trainer's memory plan decided (core: trainer/protocol.ts memoryPlanSchema). */
export type TrainingMemory = Omit<MemoryPlanView, "backend" | "availableDeviceBytes"> & { availableDeviceBytes: number | null };

function readMemory(m: MemoryPlanView | null | undefined): TrainingMemory | null {
  if (!m || typeof m.summary !== "string") return null;
  return {
    fits: m.fits === true,
    summary: m.summary,
    maxContext: m.maxContext ?? 0,
    requestedMaxContext: m.requestedMaxContext ?? 0,
    maxContextThatFits: m.maxContextThatFits ?? 0,
    needDeviceBytes: m.needDeviceBytes ?? 0,
    availableDeviceBytes: num(m.availableDeviceBytes),
    needHostBytes: m.needHostBytes ?? 0,
    availableHostBytes: m.availableHostBytes ?? 0,
  };
}

/** The learning loop's status: /api/status's or GET /api/training's `training`, or a `training` event's. */
export function readTraining(body: unknown): TrainingStatus {
  const t = fromCore<Omit<TrainingStatusView, "state"> & { state: string; judgeQueue: number | null }>(body);
  const state = t.state ?? "idle";
  return {
    state,
    step: num(t.step),
    steps: num(t.steps),
    stepSeconds: num(t.stepSeconds),
    progress: t.progress ?? null,
    samplesWaiting: num(t.samplesWaiting),
    judgeQueue: num(t.judgeQueue),
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

export function readStatus(body: unknown): CoreStatus {
  const s = fromCore<StatusReply>(body);
  const model = readModel(s.model);
  if (model && model.gpuLayers === null) model.gpuLayers = num(s.gpu?.layers);
  return {
    model,
    backend: s.backend ?? null,
    gpu: s.gpu?.name ?? null,
    adapter: s.adapter ?? "base",
    training: readTraining(s.training),
  };
}

export interface SessionSummary {
  id: string;
  title: string;
  updatedAt: number | null;
  turnCount: number | null;
  /** "ui" (our chat) or "outside" (an API client such as OpenClaw) */
  source: string | null;
}

/** GET /api/sessions, most recently active first. */
export function readSessions(body: unknown): SessionSummary[] {
  return (fromCore<SessionsReply>(body).sessions ?? [])
    .map((s) => ({ id: s.id, title: s.title ?? "", updatedAt: time(s.lastActivityAt), turnCount: num(s.turnCount), source: s.source ?? null }))
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
  if (!t || typeof t.decodeMs !== "number") return null;
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

/** Message content as text: plain strings, or OpenAI text-part arrays. */
export function contentText(c: unknown): string {
  if (typeof c === "string") return c;
  return (Array.isArray(c) ? c : []).map((p) => (isObj(p) && typeof p.text === "string" ? p.text : "")).join("");
}

/** A recorded turn (GET /api/sessions/:id's turns, GET /api/training's recentJudged). */
export function readTurn(body: unknown): Turn {
  const t = fromCore<TurnView>(body);
  const messages = (t.messages ?? []).map((m) => ({ role: m.role ?? "user", content: contentText(m.content) }));
  // OpenClaw appends its internal context as a last user message: that is not what the user said.
  const lastUser = [...messages].reverse().find((m) => m.role === "user" && !m.content.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"));
  const thumbs = t.feedback?.thumbs;
  return {
    id: t.turnId ?? "",
    type: t.type ?? "main",
    userText: lastUser?.content ?? "",
    messages,
    response: t.text ?? "",
    adapter: t.adapter ?? "base",
    thumbs: thumbs === "up" || thumbs === "down" ? thumbs : null,
    hint: t.feedback?.hint ?? null,
    reward: num(t.reward),
    votes: (t.judge?.votes ?? []).map((v) => ({ score: num(v.score), text: v.text ?? null })),
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
export function readSession(body: unknown): SessionDetail {
  const s = fromCore<SessionReply>(body);
  return { id: s.session?.id ?? "", title: s.session?.title ?? "", generation: s.session?.generation ?? null, turns: (s.turns ?? []).map(readTurn) };
}

export interface Checkpoint {
  n: number;
  version: string;
  at: number | null;
  samples: number | null;
  meanReward: number | null;
  loss: number | null;
  kl: number | null;
  verdict: string | null;
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
export function readCheckpoints(body: unknown): { items: Checkpoint[]; active: string | null } {
  const r = fromCore<CheckpointsReply>(body);
  const active = r.active ?? null;
  const items = (r.checkpoints ?? []).map((c: Partial<CheckpointView>) => {
    const n = c.n ?? 0;
    const version = c.version ?? `ckpt-${n}`;
    return {
      n,
      version,
      at: time(c.createdAt),
      samples: num(c.samples),
      meanReward: num(c.meanReward),
      loss: num(c.loss),
      kl: num(c.kl),
      verdict: c.verdict ?? null,
      active: c.active === true || active === version,
      pinned: c.pinned === true,
      imported: c.imported === true,
      revertReason: c.reverted?.reason ?? null,
      klToBase: num(c.klToBase?.recent),
      model: c.model ?? null,
      forServedModel: c.forServedModel !== false,
    };
  });
  return { items, active };
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
  verdict: string | null;
}

/** Points for the training charts: GET /api/training's history, else the checkpoints (published or rejected candidates) in time order. */
export function metricSeries(checkpoints: Checkpoint[], history: Partial<TrainingHistoryPoint>[] | null | undefined): MetricPoint[] {
  if (history?.length) {
    return history.map((h) => ({
      at: time(h.at),
      meanReward: num(h.meanReward),
      loss: num(h.loss),
      kl: num(h.kl),
      klToBase: num(h.klToBase),
      klToBaseHeldBack: num(h.klToBaseHeldBack),
      driftBudget: num(h.driftBudget),
      verdict: h.verdict ?? null,
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
  download: DownloadState | null;
  recommended: boolean;
  quantization: string | null;
  notes: string | null;
  serveMemoryBytes: number | null;
  /** Whether it would train on this machine (the trainer's memory plan for its shape). */
  training: Trainability | null;
}

export type DownloadState = Omit<DownloadView, "id" | "state"> & { state: string };

function readDownload(d: DownloadView | null | undefined): DownloadState | null {
  if (!d) return null;
  return { state: d.state ?? "downloading", bytes: d.bytes ?? 0, total: num(d.total), speed: num(d.speed), etaSeconds: num(d.etaSeconds), error: d.error ?? null };
}

export interface ModelsView {
  active: ModelInfo | null;
  catalog: CatalogEntry[];
  /** downloaded or imported models (ids usable with "use") */
  installed: (ModelInfo & { id: string; origin: string | null })[];
  recommendation: string | null;
  restartRequired: boolean;
}

/** GET /api/models */
export function readModels(body: unknown): ModelsView {
  const r = fromCore<ModelsReply>(body);
  return {
    active: readModel(r.active),
    catalog: (r.catalog ?? []).map((m) => ({
      id: m.id,
      name: m.name ?? m.id,
      sizeBytes: num(m.sizeBytes),
      arch: m.architecture ?? null,
      license: m.license ?? null,
      installed: m.installed === true,
      download: readDownload(m.download),
      recommended: m.recommended === true,
      quantization: m.quantization ?? null,
      notes: m.notes ?? null,
      serveMemoryBytes: num(m.serveMemoryBytes),
      training: readTrainability(m.training),
    })),
    installed: (r.installed ?? []).map((m) => ({ ...readModel(m)!, id: m.id, origin: m.origin ?? null })),
    recommendation: r.recommendation?.reason ?? null,
    restartRequired: r.restartRequired === true,
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
 * GET /api/settings (or a `settings` event's `settings`): the fields the form edits, as the core
 * sends them (all, with its defaults). The defaults live in the core's schema only
 * (store/settings.ts): the form waits for this reply instead of showing values of its own.
 */
export function readSettings(body: unknown): Settings {
  const s = (isObj(body) && isObj(body.settings) ? body.settings : body) as CoreSettings;
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
export function readModelSwitch(body: unknown): ModelSwitch | null {
  const e = fromCore<ModelSwitchEvent>(body);
  if (e.change !== "switch" || e.state === undefined) return null;
  return { name: e.name ?? "the model", state: e.state, progress: e.progress ?? null, error: e.error ?? null };
}

/**
 * The SSE events of GET /api/events (`event: <name>`, JSON `data:`): every event of the core's
 * bus, which is typed with this map (rollout/events.ts EventBus), so what is emitted is what
 * the UI is told it gets.
 */
import type { Preference } from "./preferenceSchema.js";
import type { Settings } from "./settings.js";
import type { AnswerEditView, FeedbackView, SessionView } from "./sessions.js";
import type { CheckpointEvent, TrainingStatusView } from "./training.js";
import type { DownloadEvent, ModelsEvent } from "./models.js";
import type { StatusEvent } from "./status.js";
import type { DoctorEvent } from "./doctor.js";

/** A completed turn, small enough to send to every SSE client. */
export interface TurnSummary {
  turnId: string;
  sessionId: string;
  index: number;
  type: "main" | "side";
  time: string;
  adapter: string;
  finishReason: string;
  responseTokenCount: number;
  text: string;
}

/** `swap`: an adapter was put into service (checkpoint null: the base model). */
export interface SwapEvent {
  version: string;
  checkpoint: number | null;
  pauseMs: number;
  drained: boolean;
  stragglers: number;
}

/** `revert`: the watch on the served adapter rolled a checkpoint back by itself (to: the one served now; null = base model). */
export interface RevertEvent {
  checkpoint: number;
  to: number | null;
  version: string;
  reason: string;
  rule: string;
  at: string;
}

/** `preferences`: a preference was created, edited, changed status (by the user or the loop), deleted, restored or checked. */
export interface PreferencesEvent {
  id: string;
  change: "created" | "updated" | "deleted" | "restored" | "checked";
  preference: Preference | null;
}

/** `tools`: which server changed (null: the whole config) and what. */
export interface ToolsEvent {
  server: string | null;
  change: "status" | "tools" | "config";
}

/** Each event's payload, by name. The learning loop subscribes to `turnReady` (judge it) and `feedback`. */
export interface CoreEvents {
  turn: { turn: TurnSummary };
  /** a main turn got its next state */
  turnReady: { turnId: string; sessionId: string };
  feedback: { turnId: string; sessionId: string; feedback: FeedbackView | null };
  /** the user rewrote a turn's answer (POST /api/turns/:id/answer-edit): a cue to read the session again */
  answerEdit: { turnId: string; sessionId: string; answerEdit: AnswerEditView };
  judge: { turnId: string; sessionId: string; reward: -1 | 0 | 1 };
  session: { session: SessionView; change: "created" | "updated" | "renamed" | "settings" | "closed" | "reopened" };
  sessionDeleted: { sessionId: string };
  /** a message and its branch deleted (DELETE /api/turns/:id): these turns left the chat, the samples and training */
  turnsDeleted: { sessionId: string; turnIds: string[] };
  settings: { settings: Settings };
  /** model downloads (progress, paused, done, failed, cancelled) and model-list changes and switches (models/modelService.ts, servedModel.ts) */
  download: DownloadEvent;
  models: ModelsEvent;
  /** adapter / judge queue changes: only a cue to read GET /api/status again */
  status: StatusEvent;
  /** the learning loop's live status */
  training: { training: TrainingStatusView };
  /** a new or changed checkpoint (training/checkpoints.ts CheckpointEntry): a cue to read GET /api/checkpoints again */
  checkpoint: CheckpointEvent;
  swap: SwapEvent;
  revert: RevertEvent;
  preferences: PreferencesEvent;
  /** an MCP server's status or tool list changed, or mcp.json was changed: a cue to read GET /api/tools again */
  tools: ToolsEvent;
  /** "Check this machine" (POST /api/doctor/run): its start, one line per probe, its end (a cue to read GET /api/doctor) */
  doctor: DoctorEvent;
}

export type CoreEventName = keyof CoreEvents;

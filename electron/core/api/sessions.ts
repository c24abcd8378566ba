/** GET /api/sessions, GET /api/sessions/:id and the turns they list (store/store.ts TurnView). */
import type { ChatMessage } from "./chatTypes.js";
import type { Settings } from "./settings.js";

/** Generation settings (system prompt, temperature, top-p, max tokens): the defaults' shape. */
export type GenerationView = Settings["chatDefaults"];

export interface SessionView {
  id: string;
  title: string | null;
  createdAt: string;
  lastActivityAt: string;
  /** completed turns (main + side) */
  turnCount: number;
  mainTurnCount: number;
  closed: boolean;
  closedReason: "done" | "idle" | null;
  /** who opened it: our chat window or an outside client */
  source: "ui" | "outside";
  /**
   * The chat's own generation settings, set in the chat window's header (PATCH); absent or null:
   * it follows the defaults. Only the UI reads them: an outside client sends its own.
   */
  generation?: GenerationView | null;
}

export interface FeedbackView {
  thumbs: "up" | "down" | null;
  hint: string | null;
  time: string;
}

export interface JudgeView {
  time: string;
  /** majority vote (0 on a tie or no valid vote) */
  reward: -1 | 0 | 1;
  /** score null: the output held no valid \boxed{} */
  votes: { score: -1 | 0 | 1 | null; text: string }[];
  /** OPD hint candidates, shortest first */
  hints: string[];
}

/** How long an answer took in the engine (inference/engine.ts); on the wire as llama-server's `timings` (api/openai.ts). */
export interface AnswerTimingsView {
  /** waiting for a free sequence (other answers in progress, an adapter swap) */
  queueMs: number;
  /** prompt tokens evaluated (the rest reused the KV cache of the conversation's previous turn) */
  promptTokens: number;
  /** from the start of evaluation to the first answer token: the prompt's evaluation and the first step */
  firstTokenMs: number;
  /** answer tokens after the first, and the time they took */
  decodeTokens: number;
  decodeMs: number;
}

/** A recorded turn with what came after it. */
export interface TurnView {
  turnId: string;
  sessionId: string;
  index: number;
  type: "main" | "side";
  time: string;
  /** adapter version that answered; "base" when none */
  adapter: string;
  /** the served model that answered (its id) */
  model: string;
  /** the request's messages, as received */
  messages: ChatMessage[];
  text: string;
  feedback: FeedbackView | null;
  judge: JudgeView | null;
  reward: number | null;
  /** the standing preferences the core added to the served prompt (absent: none) */
  preferences?: PreferenceBlockView;
  /** how long it took (absent: recorded before the core measured it) */
  timings?: AnswerTimingsView;
}

/** The preference block a turn's served prompt carried (electron/core/preferences/inject.ts). */
export interface PreferenceBlockView {
  ids: string[];
  block: string;
  tokens: number;
  /** a system message (chat) or a paragraph before the text (completions) */
  placement: "system" | "prefix";
}

export interface SessionsReply {
  sessions: SessionView[];
}

export interface SessionReply {
  session: SessionView;
  turns: TurnView[];
}

/** POST /api/feedback: the turn's feedback now and the reward it makes. */
export interface FeedbackReply {
  turnId: string;
  sessionId: string;
  feedback: FeedbackView | null;
  reward: number | null;
  /** where the reward comes from: thumbs win over the judge; null when there is none */
  rewardSource: "thumbs" | "judge" | null;
}

/**
 * A session id, one rule everywhere (X-Session-Id, `session_id`, /api/sessions/:id): 1-256
 * printable ASCII characters without spaces (it goes back in a header), and without `/` or `\`
 * (it is a path segment of /api/sessions/:id, and encoded separators are refused there).
 */
export const SESSION_ID_PATTERN = /^[\x21-\x2e\x30-\x5b\x5d-\x7e]{1,256}$/;
export const SESSION_ID_RULE = "1-256 printable ASCII characters without spaces, / or \\";

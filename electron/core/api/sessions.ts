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
  /**
   * The branch chosen last (PUT /api/sessions/:id/active) and when; absent: none chosen. A turn
   * recorded after the choice is shown instead (the conversation went on).
   */
  activeBranch?: { turnId: string; at: string } | null;
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
  /**
   * The turn whose answer this turn's prompt continues (null: a first question). Turns with the same
   * parent are siblings: a regenerated answer (same prompt) or an edited question (same history,
   * another last user message). Derived from the recorded messages for turns stored before the tree.
   */
  parentTurnId: string | null;
  /** why the answer ended: its end, the token limit (the chat offers Continue), or tool calls */
  finishReason: "stop" | "length" | "tool_calls";
  /** the user stopped the answer: kept and shown (marked), never trained on */
  stopped?: boolean;
  /** the user's rewrite of this answer ("what you should have said"), the latest one; absent: none */
  answerEdit?: AnswerEditView;
  /** files attached to the turn's last user message (their text is in that message, see api/attachments.ts) */
  attachments?: AttachmentView[];
}

/** An assistant answer as the user rewrote it: kept beside the original, a training signal (docs/method.md). */
export interface AnswerEditView {
  text: string;
  time: string;
}

/** A file attached to a message: stored with its session in the data dir (api/attachments.ts). */
export interface AttachmentView {
  id: string;
  name: string;
  /** bytes of the file as dropped */
  size: number;
  /** media type as detected (text/plain, text/markdown, text/csv, application/json, application/pdf, text/x-code...) */
  mediaType: string;
  /** characters of extracted text */
  chars: number;
  /** the text was cut to fit the context: only `keptChars` of `chars` reached the prompt */
  truncated: boolean;
  keptChars: number;
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
  /** every turn of the chat, all branches (each names its parent), in recorded order */
  turns: TurnView[];
  /**
   * The branch shown: turn ids from the first question to the leaf, main turns only. The leaf is the
   * one chosen last (PUT /api/sessions/:id/active), else the latest recorded turn.
   */
  activePath: string[];
}

/** PUT /api/sessions/:id/active: show the branch that ends at (or passes through, then follows the latest child of) this turn. */
export interface ActiveBranchRequest {
  turnId: string;
}

/** POST /api/turns/:id/answer-edit: the user's rewrite of an assistant answer. */
export interface AnswerEditRequest {
  text: string;
}

/** POST /api/turns/:id/answer-edit's reply: the edit in force, and whether the original answer got it as its next state (it had none yet). */
export interface AnswerEditReply {
  turnId: string;
  sessionId: string;
  answerEdit: AnswerEditView;
  nextState: boolean;
}

/** GET /api/search?q=: chats whose titles or messages hold the text (not under /api/sessions/: that path is a session id). */
export interface SessionSearchHit {
  sessionId: string;
  title: string | null;
  /** the first matching turn (null: the title matched) */
  turnId: string | null;
  /** a short excerpt around the match */
  snippet: string;
}

export interface SessionSearchReply {
  hits: SessionSearchHit[];
}

/** GET /api/sessions/:id/export?format=json: the whole tree, feedback and the adapter of each answer. */
export interface SessionExport {
  format: "clawrl.session";
  version: 1;
  exportedAt: string;
  session: SessionView;
  activePath: string[];
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

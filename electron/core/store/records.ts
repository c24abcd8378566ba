import type { ChatMessage } from "../api/chatTypes.js";
import type { AnswerTimingsView, PreferenceBlockView } from "../api/sessions.js";

/**
 * The typed lines of logs/trajectories.jsonl. One file for every event kind (not one per
 * kind) so a single append order holds across kinds (a feedback line always follows its
 * turn), recovery and fsync cover one file, and export is one pass. Lines are never
 * rewritten: changes (feedback withdrawn, session deleted) are new lines.
 */
export type TurnType = "main" | "side";
export type Thumbs = "up" | "down";

export interface ToolCallRecord {
  id: string;
  name: string;
  arguments: string;
}

export interface SamplingRecord {
  temperature: number;
  topP: number;
  seed?: number;
  maxTokens?: number;
}

export interface TurnRecord {
  kind: "turn";
  v: 1;
  turnId: string;
  sessionId: string;
  /** 0-based position among the session's completed turns */
  index: number;
  type: TurnType;
  startedAt: string;
  time: string;
  fromUi: boolean;
  model: string;
  /** adapter version that answered; "base" when none */
  adapter: string;
  /** the request's messages, as received (rl fields removed) */
  messages: ChatMessage[];
  /** "completion": a plain-text prompt (POST /v1/completions; one user message holds it), no chat template; absent: chat */
  format?: "completion";
  /**
   * The preference block the server added to the prompt (electron/core/preferences/): `messages`
   * stay as the client sent them, `promptTokens` are what was served (with the block) and
   * `clientPromptTokens` the client's prompt alone (the student's prompt in context distillation).
   */
  preferences?: PreferenceBlockView;
  promptTokens: number[];
  clientPromptTokens?: number[];
  responseTokens: number[];
  /** log p(sampled token) under the serving policy, one per response token */
  tokenLogprobs: number[];
  text: string;
  toolCalls?: ToolCallRecord[];
  finishReason: "stop" | "length" | "tool_calls";
  sampling: SamplingRecord;
  /** how long the answer took (absent in turns recorded before it was measured) */
  timings?: AnswerTimingsView;
  sessionDone: boolean;
  /** hash of the canonical prompt + answer: a later request starting with it continues this session */
  prefixKey: string;
  /**
   * The turn whose prompt + answer this turn's messages continue (null: a first question). Absent in
   * turns recorded before the conversation tree: the store derives it from `messages` on open.
   */
  parentTurnId?: string | null;
  /** the client stopped the answer (closed its stream): `text` is what it had received; never trained on */
  stopped?: true;
}

export interface NextStateRecord {
  kind: "next_state";
  v: 1;
  time: string;
  turnId: string;
  sessionId: string;
  /** the turn whose request carried these messages */
  fromTurnId: string;
  /** what the client appended after our answer (user replies, tool results), internal context removed */
  messages: ChatMessage[];
}

/** The full explicit feedback on a turn after a change (null = none / withdrawn). */
export interface FeedbackRecord {
  kind: "feedback";
  v: 1;
  time: string;
  turnId: string;
  sessionId: string;
  thumbs: Thumbs | null;
  hint: string | null;
}

export interface JudgeVote {
  /** -1, 0, 1; null when the output held no valid \boxed{} */
  score: -1 | 0 | 1 | null;
  text: string;
  /** why the judge gave no output for this vote (endpoint error...) */
  error?: string;
}

export interface JudgeRecord {
  kind: "judge";
  v: 1;
  time: string;
  turnId: string;
  sessionId: string;
  /** majority vote (0 on a tie or no valid vote) */
  reward: -1 | 0 | 1;
  votes: JudgeVote[];
  /** OPD hint candidates, shortest first */
  hints: string[];
  /** the hint extractor's votes (\boxed{1|-1} + hint), raw texts included */
  hintVotes?: Array<JudgeVote & { hint: string | null }>;
  representative: string | null;
  /** which judge answered (e.g. "base", a GGUF path, an endpoint model) */
  judge: string;
}

export interface SessionDeletedRecord {
  kind: "session_deleted";
  v: 1;
  time: string;
  sessionId: string;
}

/** The user's rewrite of an assistant answer ("what you should have said"): a training target (docs/method.md). The latest one is in force. */
export interface AnswerEditRecord {
  kind: "answer_edit";
  v: 1;
  time: string;
  turnId: string;
  sessionId: string;
  text: string;
}

/** A message and its branch deleted: the turn and every turn below it leave reads, samples and training. */
export interface TurnDeletedRecord {
  kind: "turn_deleted";
  v: 1;
  time: string;
  /** the turn the user deleted */
  turnId: string;
  sessionId: string;
  /** every turn removed: `turnId` and its descendants when the delete was made */
  turnIds: string[];
}

export type TrajectoryRecord = TurnRecord | NextStateRecord | FeedbackRecord | JudgeRecord | SessionDeletedRecord | AnswerEditRecord | TurnDeletedRecord;

export const RECORD_KINDS = new Set<TrajectoryRecord["kind"]>(["turn", "next_state", "feedback", "judge", "session_deleted", "answer_edit", "turn_deleted"]);

export function isRecord(v: unknown): v is TrajectoryRecord {
  return (
    typeof v === "object" &&
    v !== null &&
    RECORD_KINDS.has((v as { kind?: unknown }).kind as TrajectoryRecord["kind"]) &&
    ((v as { kind: string }).kind === "session_deleted" || typeof (v as { turnId?: unknown }).turnId === "string") &&
    typeof (v as { sessionId?: unknown }).sessionId === "string"
  );
}

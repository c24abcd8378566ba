import path from "node:path";
import type { LowSync } from "lowdb";
import type { ChatMessage } from "../api/chatTypes.js";
import type { AttachmentView } from "../api/sessions.js";
import { dataPaths } from "../config/paths.js";
import { turnAttachments } from "../attachments/turns.js";
import { AppendLog, describeRecovery, type LogLocation, type LogOpenReport } from "./appendLog.js";
import {
  isRecord,
  type AnswerEditRecord,
  type FeedbackRecord,
  type JudgeRecord,
  type NextStateRecord,
  type Thumbs,
  type TrajectoryRecord,
  type TurnRecord,
  type TurnType,
} from "./records.js";
import type { Settings } from "../api/settings.js";
import { applySettingsPatch } from "./settings.js";
import { openState, type SessionMeta, type StateData } from "./state.js";

export interface FeedbackState {
  thumbs: Thumbs | null;
  hint: string | null;
  time: string;
}

/** What the store keeps in memory per turn: small facts plus where the big lines are. */
export interface TurnEntry {
  turnId: string;
  sessionId: string;
  index: number;
  type: TurnType;
  time: string;
  fromUi: boolean;
  prefixKey: string;
  loc: LogLocation;
  feedback: FeedbackState | null;
  feedbackLocs: LogLocation[];
  judge: { reward: -1 | 0 | 1; loc: LogLocation } | null;
  nextState: LogLocation | null;
  /** served with a preference block (and the client's prompt tokens recorded): a context-distillation sample */
  preferenceBlock: boolean;
  /** the latest answer_edit line (the user's rewrite of the answer); absent: none */
  answerEdit?: LogLocation;
}

export interface RewardInfo {
  reward: number | null;
  /** explicit thumbs override the judge */
  source: "thumbs" | "judge" | null;
}

/** A turn as the app API and export show it. */
export interface TurnView extends Omit<TurnRecord, "kind" | "v" | "promptTokens" | "clientPromptTokens" | "responseTokens" | "tokenLogprobs" | "prefixKey"> {
  promptTokenCount: number;
  responseTokenCount: number;
  promptTokens?: number[];
  clientPromptTokens?: number[];
  responseTokens?: number[];
  tokenLogprobs?: number[];
  nextState: ChatMessage[] | null;
  feedback: FeedbackState | null;
  judge: Omit<JudgeRecord, "kind" | "v" | "turnId" | "sessionId"> | null;
  reward: number | null;
  rewardSource: RewardInfo["source"];
  /** the user's rewrite of the answer, the latest one (absent: none) */
  answerEdit?: { text: string; time: string };
  /** files attached to the last user message (attachments/turns.ts; absent: none) */
  attachments?: AttachmentView[];
}

export interface StoreOptions {
  /** open without writing anything (export while the app runs) */
  readOnly?: boolean;
  /** fdatasync each log line (default true) */
  durable?: boolean;
  /** how long activity-only session updates may wait before state.json is rewritten (default 1 s) */
  flushDelayMs?: number;
}

export class UnknownTurnError extends Error {
  constructor(readonly turnId: string) {
    super(`unknown turn '${turnId}'`);
    this.name = "UnknownTurnError";
  }
}

export function rewardOf(e: Pick<TurnEntry, "feedback" | "judge">): RewardInfo {
  if (e.feedback?.thumbs) return { reward: e.feedback.thumbs === "up" ? 1 : -1, source: "thumbs" };
  if (e.judge) return { reward: e.judge.reward, source: "judge" };
  return { reward: null, source: null };
}

/**
 * The app's data: lowdb state.json (settings, sessions index, checkpoints, training status)
 * and the append-only logs/trajectories.jsonl (turns, next states, feedback, judge results).
 * Opening scans the log once and keeps an index by turn id with byte offsets, so reading a
 * session's turns is a few preads, never a scan. The log is the truth for turns; the sessions
 * index in state.json is reconciled with it on open (a crash between the two writes heals).
 */
export class Store {
  readonly recovery: LogOpenReport;
  /** one line describing what recovery cut or skipped, or null */
  readonly recoveryMessage: string | null;
  private readonly turns: Map<string, TurnEntry>;
  private readonly bySession: Map<string, TurnEntry[]>;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly flushDelayMs: number;

  private constructor(
    readonly dataDir: string,
    private readonly db: LowSync<StateData>,
    private readonly log: AppendLog,
    recovery: LogOpenReport,
    readonly readOnly: boolean,
    index: TurnIndex,
    flushDelayMs: number,
  ) {
    this.flushDelayMs = flushDelayMs;
    this.recovery = recovery;
    this.recoveryMessage = describeRecovery(recovery);
    this.turns = index.turns;
    this.bySession = index.bySession;
  }

  static open(dataDir: string, opts: StoreOptions = {}): Store {
    const paths = dataPaths(path.resolve(dataDir));
    const db = openState(paths.state, opts.readOnly);
    const index: TurnIndex = { turns: new Map(), bySession: new Map() };
    const { log, report } = AppendLog.open(paths.trajectories, {
      readOnly: opts.readOnly,
      durable: opts.durable,
      onLine: (value, offset, length) => {
        // A line from a newer version is kept in the file and ignored here. Only the index
        // keeps anything: big turn lines are garbage right after this call.
        if (isRecord(value)) indexRecord(index, value, { offset, length });
      },
    });
    const store = new Store(paths.root, db, log, report, opts.readOnly ?? false, index, opts.flushDelayMs ?? 1_000);
    store.reconcileSessions();
    return store;
  }

  close(): void {
    if (this.flushTimer) this.flush();
    this.log.close();
  }

  // ---- state.json ----

  get settings(): Settings {
    return this.db.data.settings;
  }

  updateSettings(patch: unknown): Settings {
    const next = applySettingsPatch(this.db.data.settings, patch);
    this.db.update((d) => {
      d.settings = next;
    });
    return next;
  }

  /** The whole state (read-only use). */
  get state(): Readonly<StateData> {
    return this.db.data;
  }

  /** Mutates state.json atomically (checkpoints, training status...). */
  updateState(fn: (d: StateData) => void): void {
    this.db.update(fn);
  }

  /** Sessions, most recently active first. */
  sessions(): SessionMeta[] {
    return Object.values(this.db.data.sessions).sort((a, b) => (a.lastActivityAt < b.lastActivityAt ? 1 : a.lastActivityAt > b.lastActivityAt ? -1 : 0));
  }

  session(id: string): SessionMeta | undefined {
    return Object.hasOwn(this.db.data.sessions, id) ? this.db.data.sessions[id] : undefined;
  }

  /**
   * Stores a session's metadata. `lazy`: only activity changed (turn counts, last activity),
   * which the log can rebuild, so the write is coalesced with others (within `flushDelayMs`,
   * and on close) instead of rewriting state.json on every turn.
   */
  putSession(meta: SessionMeta, opts: { lazy?: boolean } = {}): void {
    this.db.data.sessions[meta.id] = meta;
    if (opts.lazy) this.scheduleFlush();
    else this.flush();
  }

  /** Writes pending state changes now. */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.readOnly) this.db.write();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.readOnly) return;
    this.flushTimer = setTimeout(() => this.flush(), this.flushDelayMs);
    this.flushTimer.unref();
  }

  /** Removes a session from the index and appends a tombstone; its turns disappear from reads and export. */
  deleteSession(id: string): boolean {
    const known = this.session(id) !== undefined || this.bySession.has(id);
    if (!known) return false;
    const rec = { kind: "session_deleted" as const, v: 1 as const, time: new Date().toISOString(), sessionId: id };
    const loc = this.log.append(rec);
    this.indexRecord(rec, loc);
    this.db.update((d) => {
      delete d.sessions[id];
    });
    return true;
  }

  // ---- trajectories.jsonl ----

  /**
   * Records a completed turn and, in the same write, the next state it gives an earlier turn
   * (one sync per request on the hot path).
   */
  appendTurn(rec: Omit<TurnRecord, "kind" | "v">, nextState?: Omit<NextStateRecord, "kind" | "v" | "time" | "fromTurnId">): TurnEntry {
    const full: TurnRecord = { kind: "turn", v: 1, ...rec };
    if (!nextState) return this.indexRecord(full, this.log.append(full)) as TurnEntry;
    this.requireTurn(nextState.turnId);
    const ns: NextStateRecord = { kind: "next_state", v: 1, time: rec.time, ...nextState, fromTurnId: rec.turnId };
    const [a, b] = this.log.appendAll([full, ns]);
    const entry = this.indexRecord(full, a) as TurnEntry;
    this.indexRecord(ns, b);
    return entry;
  }

  appendNextState(rec: Omit<NextStateRecord, "kind" | "v" | "time">): void {
    this.requireTurn(rec.turnId);
    const full: NextStateRecord = { kind: "next_state", v: 1, time: new Date().toISOString(), ...rec };
    this.indexRecord(full, this.log.append(full));
  }

  /**
   * Records a feedback change. `thumbs: null` withdraws the thumbs; `hint: null` or "" withdraws
   * the hint; an absent field keeps its value. Returns the feedback now in force.
   */
  appendFeedback(turnId: string, change: { thumbs?: Thumbs | null; hint?: string | null }): FeedbackState {
    const e = this.requireTurn(turnId);
    const prev = e.feedback;
    const hint = change.hint === undefined ? (prev?.hint ?? null) : change.hint === null || change.hint.trim() === "" ? null : change.hint;
    const rec: FeedbackRecord = {
      kind: "feedback",
      v: 1,
      time: new Date().toISOString(),
      turnId,
      sessionId: e.sessionId,
      thumbs: change.thumbs === undefined ? (prev?.thumbs ?? null) : change.thumbs,
      hint,
    };
    this.indexRecord(rec, this.log.append(rec));
    return e.feedback as FeedbackState;
  }

  appendJudge(rec: Omit<JudgeRecord, "kind" | "v" | "time" | "sessionId">): void {
    const e = this.requireTurn(rec.turnId);
    const full: JudgeRecord = { kind: "judge", v: 1, time: new Date().toISOString(), sessionId: e.sessionId, ...rec };
    this.indexRecord(full, this.log.append(full));
  }

  /** Records the user's rewrite of a turn's answer (the latest one is in force). */
  appendAnswerEdit(turnId: string, text: string): { text: string; time: string } {
    const e = this.requireTurn(turnId);
    const rec: AnswerEditRecord = { kind: "answer_edit", v: 1, time: new Date().toISOString(), turnId, sessionId: e.sessionId, text };
    this.indexRecord(rec, this.log.append(rec));
    return { text, time: rec.time };
  }

  /** The user's rewrite of a turn's answer in force, or null. */
  readAnswerEdit(turnId: string): { text: string; time: string } | null {
    const e = this.requireTurn(turnId);
    if (!e.answerEdit) return null;
    const r = this.log.read(e.answerEdit) as AnswerEditRecord;
    return { text: r.text, time: r.time };
  }

  turnEntry(turnId: string): TurnEntry | undefined {
    return this.turns.get(turnId);
  }

  /** How many live turns there are. */
  get turnCount(): number {
    return this.turns.size;
  }

  /** Every live turn, in log order. */
  turnEntries(): IterableIterator<TurnEntry> {
    return this.turns.values();
  }

  /** A session's turns in order (index only; no file reads). */
  sessionTurns(sessionId: string): readonly TurnEntry[] {
    return this.bySession.get(sessionId) ?? [];
  }

  readTurn(turnId: string): TurnRecord {
    return this.log.read(this.requireTurn(turnId).loc) as TurnRecord;
  }

  readNextState(turnId: string): ChatMessage[] | null {
    const e = this.requireTurn(turnId);
    return e.nextState ? (this.log.read(e.nextState) as NextStateRecord).messages : null;
  }

  readJudge(turnId: string): JudgeRecord | null {
    const e = this.requireTurn(turnId);
    return e.judge ? (this.log.read(e.judge.loc) as JudgeRecord) : null;
  }

  readFeedbackHistory(turnId: string): FeedbackRecord[] {
    return this.requireTurn(turnId).feedbackLocs.map((l) => this.log.read(l) as FeedbackRecord);
  }

  /** A turn with its next state, feedback, judge result and reward. */
  turnView(turnId: string, opts: { tokens?: boolean } = {}): TurnView {
    const e = this.requireTurn(turnId);
    const { kind: _k, v: _v, promptTokens, clientPromptTokens, responseTokens, tokenLogprobs, prefixKey: _p, ...rest } = this.readTurn(turnId);
    const judge = this.readJudge(turnId);
    const r = rewardOf(e);
    const view: TurnView = {
      ...rest,
      promptTokenCount: promptTokens.length,
      responseTokenCount: responseTokens.length,
      nextState: this.readNextState(turnId),
      feedback: e.feedback,
      judge: judge ? (({ kind: _a, v: _b, turnId: _c, sessionId: _d, ...j }) => j)(judge) : null,
      reward: r.reward,
      rewardSource: r.source,
    };
    const answerEdit = this.readAnswerEdit(turnId);
    if (answerEdit) view.answerEdit = answerEdit;
    const attachments = turnAttachments(this.dataDir, rest.sessionId, rest.messages);
    if (attachments) view.attachments = attachments;
    if (opts.tokens) Object.assign(view, { promptTokens, responseTokens, tokenLogprobs, ...(clientPromptTokens ? { clientPromptTokens } : {}) });
    return view;
  }

  private requireTurn(turnId: string): TurnEntry {
    const e = this.turns.get(turnId);
    if (!e) throw new UnknownTurnError(turnId);
    return e;
  }

  private indexRecord(rec: TrajectoryRecord, loc: LogLocation): TurnEntry | undefined {
    return indexRecord({ turns: this.turns, bySession: this.bySession }, rec, loc);
  }

  /** Makes the sessions index agree with the log (counts, activity; sessions the index missed). */
  private reconcileSessions(): void {
    const sessions = this.db.data.sessions;
    let changed = false;
    for (const [id, list] of this.bySession) {
      const first = list[0];
      const last = list[list.length - 1];
      const mainCount = list.filter((e) => e.type === "main").length;
      const cur = Object.hasOwn(sessions, id) ? sessions[id] : undefined;
      if (!cur) {
        sessions[id] = {
          id,
          title: null,
          createdAt: first.time,
          lastActivityAt: last.time,
          turnCount: list.length,
          mainTurnCount: mainCount,
          closed: false,
          closedReason: null,
          source: first.fromUi ? "ui" : "outside",
        };
        changed = true;
      } else if (cur.turnCount !== list.length || cur.mainTurnCount !== mainCount || cur.lastActivityAt < last.time) {
        cur.turnCount = list.length;
        cur.mainTurnCount = mainCount;
        if (cur.lastActivityAt < last.time) cur.lastActivityAt = last.time;
        changed = true;
      }
    }
    if (changed && !this.readOnly) this.db.write();
  }
}

interface TurnIndex {
  turns: Map<string, TurnEntry>;
  bySession: Map<string, TurnEntry[]>;
}

function indexRecord(ix: TurnIndex, rec: TrajectoryRecord, loc: LogLocation): TurnEntry | undefined {
  switch (rec.kind) {
    case "turn": {
      const e: TurnEntry = {
        turnId: rec.turnId,
        sessionId: rec.sessionId,
        index: rec.index,
        type: rec.type,
        time: rec.time,
        fromUi: rec.fromUi,
        prefixKey: rec.prefixKey,
        loc,
        feedback: null,
        feedbackLocs: [],
        judge: null,
        nextState: null,
        preferenceBlock: rec.preferences !== undefined && Array.isArray(rec.clientPromptTokens) && rec.clientPromptTokens.length > 0,
      };
      ix.turns.set(e.turnId, e);
      let list = ix.bySession.get(e.sessionId);
      if (!list) ix.bySession.set(e.sessionId, (list = []));
      list.push(e);
      return e;
    }
    case "next_state": {
      const e = ix.turns.get(rec.turnId);
      if (e && !e.nextState) e.nextState = loc; // the first pairing wins
      return e;
    }
    case "feedback": {
      const e = ix.turns.get(rec.turnId);
      if (e) {
        e.feedback = rec.thumbs === null && rec.hint === null ? null : { thumbs: rec.thumbs, hint: rec.hint, time: rec.time };
        e.feedbackLocs.push(loc);
      }
      return e;
    }
    case "judge": {
      const e = ix.turns.get(rec.turnId);
      if (e) e.judge = { reward: rec.reward, loc }; // a re-judgement replaces the earlier one
      return e;
    }
    case "answer_edit": {
      const e = ix.turns.get(rec.turnId);
      if (e) e.answerEdit = loc; // a later edit replaces the earlier one
      return e;
    }
    case "session_deleted": {
      for (const e of ix.bySession.get(rec.sessionId) ?? []) ix.turns.delete(e.turnId);
      ix.bySession.delete(rec.sessionId);
      return undefined;
    }
  }
}

export type { SessionMeta, StateData } from "./state.js";
export type { Settings } from "../api/settings.js";

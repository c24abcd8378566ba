import path from "node:path";
import type { LowSync } from "lowdb";
import type { ChatMessage } from "../api/chatTypes.js";
import type { AttachmentView } from "../api/sessions.js";
import { dataPaths } from "../config/paths.js";
import { turnAttachments } from "../attachments/turns.js";
import { AppendLog, describeRecovery, type LogLocation, type LogOpenReport } from "./appendLog.js";
import { prefixChain, withoutInternalContext } from "./messageKeys.js";
import {
  isRecord,
  type AnswerEditRecord,
  type FeedbackRecord,
  type JudgeRecord,
  type NextStateRecord,
  type Thumbs,
  type TrajectoryRecord,
  type TurnDeletedRecord,
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
  /** the turn whose prompt + answer this one continues (null: a first question); derived from the messages for turns recorded before the tree */
  parentTurnId: string | null;
  /** the client stopped the answer: shown, never trained on */
  stopped: boolean;
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
  parentTurnId: string | null;
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
  private readonly prefixes: TurnIndex["prefixes"];
  private readonly nextIndex: TurnIndex["nextIndex"];
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
    this.prefixes = index.prefixes;
    this.nextIndex = index.nextIndex;
  }

  static open(dataDir: string, opts: StoreOptions = {}): Store {
    const paths = dataPaths(path.resolve(dataDir));
    const db = openState(paths.state, opts.readOnly);
    const index: TurnIndex = { turns: new Map(), bySession: new Map(), prefixes: new Map(), nextIndex: new Map() };
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

  // ---- the conversation tree ----

  /** The index the session's next turn gets (after every turn recorded, deleted ones included). */
  nextTurnIndex(sessionId: string): number {
    return this.nextIndex.get(sessionId) ?? 0;
  }

  /** The latest live turn of the session whose prefix key this is (a request continuing it). */
  turnByPrefix(sessionId: string, prefixKey: string): TurnEntry | undefined {
    const id = this.prefixes.get(sessionId)?.get(prefixKey);
    return id === undefined ? undefined : this.turns.get(id);
  }

  /** A turn's live children (its regenerated answers and edited follow-ups), in recorded order. */
  childrenOf(turnId: string): TurnEntry[] {
    const e = this.turns.get(turnId);
    return e ? this.sessionTurns(e.sessionId).filter((c) => c.parentTurnId === turnId) : [];
  }

  /** The turn and every live turn below it. */
  branchOf(turnId: string): TurnEntry[] {
    const root = this.requireTurn(turnId);
    const below = new Set([turnId]);
    const out = [root];
    // Children come after their parent in the log, so one pass in recorded order finds them all.
    for (const e of this.sessionTurns(root.sessionId)) {
      if (e.parentTurnId !== null && below.has(e.parentTurnId) && !below.has(e.turnId)) {
        below.add(e.turnId);
        out.push(e);
      }
    }
    return out;
  }

  /**
   * The branch shown: main turns from the first question to the leaf. The leaf is the branch chosen
   * last (an inner turn: its latest child, down to a leaf), unless a main turn was recorded after
   * the choice; else the latest recorded main turn.
   */
  activePath(sessionId: string): string[] {
    const mains = this.sessionTurns(sessionId).filter((e) => e.type === "main");
    if (mains.length === 0) return [];
    const latest = mains[mains.length - 1];
    const chosen = this.session(sessionId)?.activeBranch;
    const pick = chosen ? this.turns.get(chosen.turnId) : undefined;
    let leaf = pick && pick.sessionId === sessionId && latest.time <= chosen!.at ? pick : latest;
    for (let kids = this.mainChildren(leaf.turnId); kids.length > 0; kids = this.mainChildren(leaf.turnId)) leaf = kids[kids.length - 1];
    const path: string[] = [];
    const seen = new Set<string>();
    for (let e: TurnEntry | undefined = leaf; e && !seen.has(e.turnId); e = e.parentTurnId === null ? undefined : this.turns.get(e.parentTurnId)) {
      seen.add(e.turnId);
      if (e.type === "main") path.push(e.turnId);
    }
    return path.reverse();
  }

  private mainChildren(turnId: string): TurnEntry[] {
    return this.childrenOf(turnId).filter((c) => c.type === "main");
  }

  /** Shows the branch through `turnId` from now on (kept in state.json); returns the active path. */
  setActiveBranch(sessionId: string, turnId: string): string[] {
    const meta = this.session(sessionId);
    const e = this.requireTurn(turnId);
    if (!meta || e.sessionId !== sessionId) throw new UnknownTurnError(turnId);
    this.putSession({ ...meta, activeBranch: { turnId, at: new Date().toISOString() } });
    return this.activePath(sessionId);
  }

  /**
   * Deletes a turn (a message) and its branch: one appended line; the turns leave every read
   * (views, samples, training, export). Returns the ids removed.
   */
  deleteTurn(turnId: string): string[] {
    const root = this.requireTurn(turnId);
    const ids = this.branchOf(turnId).map((e) => e.turnId);
    const rec: TurnDeletedRecord = { kind: "turn_deleted", v: 1, time: new Date().toISOString(), turnId, sessionId: root.sessionId, turnIds: ids };
    this.indexRecord(rec, this.log.append(rec));
    const meta = this.session(root.sessionId);
    if (meta) {
      const list = this.sessionTurns(root.sessionId);
      const { activeBranch, ...rest } = meta;
      const keep = activeBranch && this.turns.has(activeBranch.turnId) ? { activeBranch } : {};
      this.putSession({ ...rest, ...keep, turnCount: list.length, mainTurnCount: list.filter((e) => e.type === "main").length });
    }
    return ids;
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
      parentTurnId: e.parentTurnId,
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
    return indexRecord({ turns: this.turns, bySession: this.bySession, prefixes: this.prefixes, nextIndex: this.nextIndex }, rec, loc);
  }

  /** Makes the sessions index agree with the log (counts, activity; sessions the index missed). */
  private reconcileSessions(): void {
    const sessions = this.db.data.sessions;
    let changed = false;
    for (const [id, list] of this.bySession) {
      if (list.length === 0) {
        // every turn of it deleted: the session stays, empty
        const cur = Object.hasOwn(sessions, id) ? sessions[id] : undefined;
        if (cur && (cur.turnCount !== 0 || cur.mainTurnCount !== 0)) {
          cur.turnCount = 0;
          cur.mainTurnCount = 0;
          changed = true;
        }
        continue;
      }
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
  /** per session: prefixKey → the latest turn with it (parents of turns recorded before the tree) */
  prefixes: Map<string, Map<string, string>>;
  /** per session: the index the next turn gets (deleted turns keep theirs) */
  nextIndex: Map<string, number>;
}

/**
 * The parent of a turn recorded before the tree: the latest earlier turn of its session whose
 * prompt + answer its messages start with (the longest such prefix), as the rollout finds it live.
 * Derived in memory on every open (the log is never rewritten, and a read-only open needs it too).
 */
function derivedParent(ix: TurnIndex, rec: TurnRecord): string | null {
  const keys = ix.prefixes.get(rec.sessionId);
  if (!keys || !Array.isArray(rec.messages)) return null;
  const visible = withoutInternalContext(rec.messages);
  const chain = prefixChain(visible);
  for (let i = chain.length - 1; i >= 0; i--) {
    if (visible[i].role !== "assistant") continue;
    const id = keys.get(chain[i]);
    if (id !== undefined && ix.turns.has(id)) return id;
  }
  return null;
}

function dropTurns(ix: TurnIndex, rec: TurnDeletedRecord): void {
  const gone = new Set(rec.turnIds.includes(rec.turnId) ? rec.turnIds : [rec.turnId, ...rec.turnIds]);
  for (const id of gone) ix.turns.delete(id);
  const list = ix.bySession.get(rec.sessionId);
  if (list)
    ix.bySession.set(
      rec.sessionId,
      list.filter((e) => !gone.has(e.turnId)),
    );
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
        parentTurnId: rec.parentTurnId !== undefined ? rec.parentTurnId : derivedParent(ix, rec),
        stopped: rec.stopped === true,
      };
      ix.turns.set(e.turnId, e);
      let list = ix.bySession.get(e.sessionId);
      if (!list) ix.bySession.set(e.sessionId, (list = []));
      list.push(e);
      let keys = ix.prefixes.get(e.sessionId);
      if (!keys) ix.prefixes.set(e.sessionId, (keys = new Map<string, string>()));
      keys.set(e.prefixKey, e.turnId);
      ix.nextIndex.set(e.sessionId, Math.max(ix.nextIndex.get(e.sessionId) ?? 0, (Number.isInteger(e.index) ? e.index : 0) + 1));
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
      ix.prefixes.delete(rec.sessionId);
      return undefined;
    }
    case "turn_deleted": {
      dropTurns(ix, rec);
      return undefined;
    }
  }
}

export type { SessionMeta, StateData } from "./state.js";
export type { Settings } from "../api/settings.js";

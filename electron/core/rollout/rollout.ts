import crypto from "node:crypto";
import { splitAttachments } from "../api/attachments.js";
import { messageText, type ChatMessage } from "../api/chatTypes.js";
import type { AnswerTimingsView, PreferenceBlockView } from "../api/sessions.js";
import type { TurnType } from "../store/records.js";
import type { SessionMeta } from "../store/state.js";
import type { Store, TurnEntry } from "../store/store.js";
import type { EventBus } from "./events.js";
import { answerMessage, canonicalMessage, chainHash, prefixChain, withoutInternalContext } from "./messages.js";
import { readRlFields } from "./turnOrigin.js";

export type { TurnType } from "../store/records.js";
export type { ChatMessage } from "../api/chatTypes.js";

/** What the /v1 route knows about a request when it starts (the contract with the server). */
export interface TurnOrigin {
  headers: Record<string, string | string[] | undefined>;
  /** rl fields the route stripped from the body before generation */
  bodyFields: { session_id?: unknown; turn_type?: unknown; session_done?: unknown };
  /** our renderer sends header X-Clawrl-Client: ui */
  fromUi: boolean;
  messages: ChatMessage[];
  /** "completion": the prompt is plain text (one user message), no chat template */
  format?: "completion";
  /** the preference block added to the prompt (not part of `messages`), and the client's prompt's tokens without it */
  preferences?: PreferenceBlockView;
  clientPromptTokens?: number[];
}

/** The preference block a request gets (preferences/block.ts planBlock makes it). */
export interface PlannedBlock {
  /** the block's text; "" when no preference is in it */
  text: string;
  /** preferences in the block, in block order */
  ids: string[];
  /** the block's tokens (as the model counts them) */
  tokens: number;
  /** active preferences left out because the budget was spent */
  overBudget: string[];
}

/** Picks the preference block of a request whose turn type is known (core.ts wires electron/core/preferences/ in). */
export type PreferencePlanner = (turn: { turnType: TurnType; fromUi: boolean }, countTokens: (text: string) => number) => PlannedBlock | null;

export interface TurnContext {
  sessionId: string;
  turnId: string;
  turnType: TurnType;
  sessionDone: boolean;
}

export interface TurnResult {
  model: string;
  /** adapter version that answered, "base" when none */
  adapter: string;
  promptTokens: number[];
  responseTokens: number[];
  /** log p(sampled token) under the serving policy, one per response token */
  tokenLogprobs: number[];
  text: string;
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  finishReason: "stop" | "length" | "tool_calls";
  sampling: { temperature: number; topP: number; seed?: number; maxTokens?: number };
  /** how long the answer took (absent: not measured, e.g. a replayed turn) */
  timings?: AnswerTimingsView;
}

export interface RolloutOptions {
  store: Store;
  bus: EventBus;
  /** clock in ms (tests pass a fake one) */
  now?: () => number;
}

interface Pending {
  ctx: TurnContext;
  startedAt: number;
  fromUi: boolean;
  messages: ChatMessage[];
  format?: "completion";
  preferences?: PreferenceBlockView;
  clientPromptTokens?: number[];
  /** the messages without internal context: what keys and next states are made of */
  visible: ChatMessage[];
  /** prefixChain(visible) */
  chain: string[];
  /** the earlier turn whose prompt + answer this request starts with, and where that prefix ends in `visible` */
  continues: { turnId: string; end: number } | null;
}

const TITLE_CHARS = 80;

/**
 * Turns and sessions (method.md): resolves each chat request to a session and a turn type,
 * records completed turns with exactly what was served, pairs each main turn with its next
 * state (what the client appended after our answer in the next main request), and closes
 * sessions on session-done or when idle. Synchronous on purpose: the /v1 route calls it on
 * the request path, and every step is a small in-memory update plus one log append.
 */
export class Rollout {
  private readonly store: Store;
  private readonly bus: EventBus;
  private readonly now: () => number;
  private readonly pending = new Map<string, Pending>();
  /** sessions opened by a request that has not completed yet (not in the store until a turn lands) */
  private readonly drafts = new Map<string, SessionMeta>();
  /** prefixKey → turn id, for requests that carry no session id */
  private readonly byPrefix = new Map<string, string>();
  /** last request start per session (ms), so in-flight work counts as activity */
  private readonly activity = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private planner: PreferencePlanner | null = null;

  constructor(opts: RolloutOptions) {
    this.store = opts.store;
    this.bus = opts.bus;
    this.now = opts.now ?? Date.now;
    for (const e of this.store.turnEntries()) this.byPrefix.set(e.prefixKey, e.turnId);
  }

  /** Sets who picks the preference block of main turns (null: none). */
  usePreferences(planner: PreferencePlanner | null): void {
    this.planner = planner;
  }

  /** The preference block a request will get, before it starts (the route renders the prompt with it). */
  preferencesFor(origin: Pick<TurnOrigin, "headers" | "bodyFields" | "fromUi">, countTokens: (text: string) => number): PlannedBlock | null {
    if (!this.planner) return null;
    return this.planner({ turnType: this.turnTypeOf(origin), fromUi: origin.fromUi }, countTokens);
  }

  /** main or side, from the rl headers/fields, who sent it, and the settings (method.md). */
  turnTypeOf(origin: Pick<TurnOrigin, "headers" | "bodyFields" | "fromUi">): TurnType {
    const rl = readRlFields(origin.headers, origin.bodyFields);
    const settings = this.store.settings;
    return (
      rl.turnType ??
      (origin.fromUi ? "main" : rl.speaksRl ? settings.outsideDefaultTurnType : settings.headerlessTurnsMain ? "main" : settings.outsideDefaultTurnType)
    );
  }

  beginTurn(origin: TurnOrigin): TurnContext {
    const rl = readRlFields(origin.headers, origin.bodyFields);
    const visible = withoutInternalContext(origin.messages);
    const chain = prefixChain(visible);
    const continues = this.findContinued(visible, chain, rl.sessionId);
    const sessionId = rl.sessionId ?? (continues ? this.store.turnEntry(continues.turnId)!.sessionId : crypto.randomUUID());
    const turnType = this.turnTypeOf(origin);
    const ctx: TurnContext = { sessionId, turnId: crypto.randomUUID(), turnType, sessionDone: rl.sessionDone };
    const now = this.now();
    if (!this.store.session(sessionId) && !this.drafts.has(sessionId)) {
      this.drafts.set(sessionId, newSessionMeta(sessionId, visible, origin.fromUi, new Date(now).toISOString()));
    }
    this.activity.set(sessionId, now);
    this.pending.set(ctx.turnId, {
      ctx,
      startedAt: now,
      fromUi: origin.fromUi,
      messages: origin.messages,
      ...(origin.format ? { format: origin.format } : {}),
      ...(origin.preferences && turnType === "main" ? { preferences: origin.preferences, clientPromptTokens: origin.clientPromptTokens } : {}),
      visible,
      chain,
      continues,
    });
    return ctx;
  }

  completeTurn(ctx: TurnContext, result: TurnResult): void {
    this.record(ctx, result, false);
  }

  /**
   * The client stopped the answer (closed its stream): the turn is recorded with what it had
   * received, marked stopped (shown, never trained on), so its question stays in the chat.
   */
  stopTurn(ctx: TurnContext, partial: TurnResult): void {
    this.record(ctx, { ...partial, finishReason: "stop" }, true);
  }

  private record(ctx: TurnContext, result: TurnResult, stopped: boolean): void {
    const p = this.pending.get(ctx.turnId);
    if (!p) throw new Error(`turn ${ctx.turnId} is not in progress (completed or aborted already)`);
    this.pending.delete(ctx.turnId);
    const now = this.now();
    const iso = new Date(now).toISOString();
    const { sessionId } = ctx;
    const existing = this.store.session(sessionId);
    const meta: SessionMeta = existing ? { ...existing } : (this.drafts.get(sessionId) ?? newSessionMeta(sessionId, p.visible, p.fromUi, iso));
    const reopened = meta.closed;
    meta.closed = false;
    meta.closedReason = null;

    const answer = answerMessage(result.text, result.toolCalls);
    const prefixKey = chainHash(p.chain.length ? p.chain[p.chain.length - 1] : "", canonicalMessage(answer));
    const pairing = ctx.turnType === "main" ? this.nextStateFor(p, sessionId, ctx.turnId) : null;
    const entry = this.store.appendTurn(
      {
        turnId: ctx.turnId,
        sessionId,
        index: this.store.nextTurnIndex(sessionId),
        type: ctx.turnType,
        startedAt: new Date(p.startedAt).toISOString(),
        time: iso,
        fromUi: p.fromUi,
        model: result.model,
        adapter: result.adapter,
        messages: p.messages,
        ...(p.format ? { format: p.format } : {}),
        ...(p.preferences ? { preferences: p.preferences } : {}),
        promptTokens: result.promptTokens,
        ...(p.preferences && p.clientPromptTokens ? { clientPromptTokens: p.clientPromptTokens } : {}),
        responseTokens: result.responseTokens,
        tokenLogprobs: result.tokenLogprobs,
        text: result.text,
        ...(result.toolCalls && result.toolCalls.length ? { toolCalls: result.toolCalls } : {}),
        finishReason: result.finishReason,
        sampling: result.sampling,
        ...(result.timings ? { timings: result.timings } : {}),
        sessionDone: ctx.sessionDone,
        prefixKey,
        parentTurnId: p.continues && this.store.turnEntry(p.continues.turnId)?.sessionId === sessionId ? p.continues.turnId : null,
        ...(stopped ? { stopped: true as const } : {}),
      },
      pairing ?? undefined,
    );
    this.byPrefix.set(prefixKey, ctx.turnId);

    const live = this.store.sessionTurns(sessionId);
    meta.turnCount = live.length;
    meta.mainTurnCount = live.filter((e) => e.type === "main").length;
    meta.lastActivityAt = iso;
    if (ctx.sessionDone) {
      meta.closed = true;
      meta.closedReason = "done";
    }
    // Activity-only changes are rebuilt from the log after a crash: let the store coalesce them.
    this.store.putSession(meta, { lazy: Boolean(existing) && !reopened && !meta.closed });
    if (!this.hasPending(sessionId)) this.drafts.delete(sessionId);
    this.activity.set(sessionId, now);

    const paired = pairing?.turnId ?? null;

    if (!existing) this.bus.emit("session", { session: meta, change: "created" });
    else if (reopened && !meta.closed) this.bus.emit("session", { session: meta, change: "reopened" });
    this.bus.emit("turn", {
      turn: {
        turnId: ctx.turnId,
        sessionId,
        index: entry.index,
        type: ctx.turnType,
        time: iso,
        adapter: result.adapter,
        finishReason: result.finishReason,
        responseTokenCount: result.responseTokens.length,
        text: result.text,
      },
    });
    if (paired) this.bus.emit("turnReady", { turnId: paired, sessionId });
    if (meta.closed) this.bus.emit("session", { session: meta, change: "closed" });
    else this.bus.emit("session", { session: meta, change: "updated" });
  }

  /** The request failed or was cancelled: nothing is recorded. */
  abortTurn(ctx: TurnContext, _reason: string): void {
    if (!this.pending.delete(ctx.turnId)) return;
    if (!this.hasPending(ctx.sessionId)) this.drafts.delete(ctx.sessionId);
  }

  /** Closes every open session idle longer than the setting; returns their ids. */
  sweepIdle(): string[] {
    const idleMs = this.store.settings.sessionIdleMinutes * 60_000;
    const now = this.now();
    const closed: string[] = [];
    for (const s of this.store.sessions()) {
      if (s.closed || this.hasPending(s.id)) continue;
      const last = Math.max(Date.parse(s.lastActivityAt), this.activity.get(s.id) ?? 0);
      if (now - last >= idleMs) {
        this.closeSession(s.id, "idle");
        closed.push(s.id);
      }
    }
    return closed;
  }

  closeSession(id: string, reason: "done" | "idle"): SessionMeta | null {
    const s = this.store.session(id);
    if (!s || s.closed) return s ?? null;
    const meta = { ...s, closed: true, closedReason: reason };
    this.store.putSession(meta);
    this.bus.emit("session", { session: meta, change: "closed" });
    return meta;
  }

  /** Sweeps for idle sessions every minute (or sooner for short idle settings). */
  start(): void {
    if (this.timer) return;
    const every = Math.max(1_000, Math.min(60_000, (this.store.settings.sessionIdleMinutes * 60_000) / 4));
    this.timer = setInterval(() => this.sweepIdle(), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Requests in flight (for shutdown and tests). */
  get inFlight(): number {
    return this.pending.size;
  }

  private hasPending(sessionId: string): boolean {
    for (const p of this.pending.values()) if (p.ctx.sessionId === sessionId) return true;
    return false;
  }

  /**
   * The latest earlier turn whose prompt + answer this request starts with (issue 10). With a
   * session id from the client, only that session's turns count.
   */
  private findContinued(visible: ChatMessage[], chain: string[], sessionId: string | null): Pending["continues"] {
    for (let i = chain.length - 1; i >= 0; i--) {
      if (visible[i].role !== "assistant") continue;
      let e: TurnEntry | undefined;
      if (sessionId !== null) e = this.store.turnByPrefix(sessionId, chain[i]);
      else {
        const turnId = this.byPrefix.get(chain[i]);
        e = turnId ? this.store.turnEntry(turnId) : undefined;
      }
      if (e) return { turnId: e.turnId, end: i + 1 };
    }
    return null;
  }

  /**
   * Next state of the main turn this request follows: the messages after our answer. Found by
   * prefix; when an outside client rewrote the history (no prefix match), the session's latest
   * unpaired main turn gets what follows the request's last assistant message. A stopped answer
   * gets none (never trained on), nor does anything a new branch of our chat window follows.
   */
  private nextStateFor(p: Pending, sessionId: string, currentTurnId: string): { turnId: string; sessionId: string; messages: ChatMessage[] } | null {
    let prev: TurnEntry | undefined;
    let appended: ChatMessage[];
    if (p.continues) {
      prev = this.store.turnEntry(p.continues.turnId);
      appended = p.visible.slice(p.continues.end);
    } else if (p.fromUi) {
      // Our chat window never rewrites a history: a request that continues no turn is a first
      // question or an edited one (a new branch), and follows no earlier answer.
      return null;
    } else {
      const turns = this.store.sessionTurns(sessionId);
      for (let i = turns.length - 1; i >= 0 && !prev; i--) {
        const t = turns[i];
        if (t.turnId !== currentTurnId && t.type === "main" && Date.parse(t.time) <= p.startedAt) prev = t;
      }
      let lastAssistant = -1;
      for (let i = p.visible.length - 1; i >= 0 && lastAssistant < 0; i--) if (p.visible[i].role === "assistant") lastAssistant = i;
      appended = lastAssistant >= 0 ? p.visible.slice(lastAssistant + 1) : p.visible.slice(-1);
    }
    appended = appended.filter((m) => m.role === "user" || m.role === "tool");
    // A stopped answer is never trained on: what follows it is no one's next state.
    if (!prev || prev.type !== "main" || prev.stopped || prev.nextState || prev.sessionId !== sessionId || appended.length === 0) return null;
    return { turnId: prev.turnId, sessionId, messages: appended };
  }
}

/** A session's meta before its first turn is written. */
function newSessionMeta(id: string, visible: ChatMessage[], fromUi: boolean, iso: string): SessionMeta {
  return {
    id,
    title: titleFrom(visible),
    createdAt: iso,
    lastActivityAt: iso,
    turnCount: 0,
    mainTurnCount: 0,
    closed: false,
    closedReason: null,
    source: fromUi ? "ui" : "outside",
  };
}

function titleFrom(visible: ChatMessage[]): string | null {
  const first = visible.find((m) => m.role === "user");
  // A message with attached files is titled by what was typed, else by the files' names (never their text).
  const said = first ? splitAttachments(messageText(first)) : null;
  const t = said ? (said.typed || said.blocks.map((b) => b.name).join(", ")).replace(/\s+/g, " ").trim() : "";
  if (!t) return null;
  return t.length > TITLE_CHARS ? `${t.slice(0, TITLE_CHARS - 1)}…` : t;
}

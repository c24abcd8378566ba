import crypto from "node:crypto";
import type { EventBus } from "../rollout/events.js";
import { UnknownTurnError, type Store } from "../store/store.js";
import type { PlannedBlock } from "../rollout/rollout.js";
import { planBlock } from "./block.js";
import { PREFERENCE_MAX_CHARS, type Preference, type PreferenceChange, type PreferenceCheck, type PreferenceStatus } from "../api/preferenceSchema.js";

/** Deleted preferences kept for undo. */
const TRASH_SIZE = 50;

export class UnknownPreferenceError extends Error {
  constructor(readonly id: string) {
    super(`unknown preference '${id}'`);
    this.name = "UnknownPreferenceError";
  }
}

export class NothingToUndoError extends Error {
  constructor(id: string) {
    super(`preference '${id}' has no change to undo`);
    this.name = "NothingToUndoError";
  }
}

/** What the SSE `preferences` event says changed. */
export interface PreferenceEvent {
  id: string;
  change: "created" | "updated" | "deleted" | "restored" | "checked";
  preference: Preference | null;
}

/** Words that make a request polite, not different. */
const FILLER = new Set(["please", "kindly", "just"]);

/** A hint as a preference's text: one line, at most PREFERENCE_MAX_CHARS. */
export function preferenceTextOf(hint: string): string {
  const t = hint.replace(/\s+/g, " ").trim();
  return t.length > PREFERENCE_MAX_CHARS ? `${t.slice(0, PREFERENCE_MAX_CHARS - 1)}…` : t;
}

/**
 * What makes two hints the same preference: their words in order, case, spacing, punctuation
 * and "please" aside ("Be brief." and "please, be brief" are one). Word order stays: "French,
 * not English" is not "English, not French".
 */
export function preferenceKey(hint: string): string {
  const text = preferenceTextOf(hint).toLowerCase();
  const words = text
    .replace(/['\u2019]/g, "") // don't = dont
    .split(/[\s\p{P}]+/u)
    .filter((w) => w && !FILLER.has(w));
  return words.length > 0 ? words.join(" ") : text; // "Please!" alone stays itself
}

/**
 * The preferences in state.json: create, edit, change status, delete (to a bounded trash),
 * restore, undo the latest change. Every change is one atomic state.json write, appended to the
 * preference's history and announced on the bus (SSE `preferences`).
 */
export class PreferenceService {
  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  list(): Preference[] {
    return this.store.state.preferences;
  }

  get(id: string): Preference {
    const p = this.store.state.preferences.find((x) => x.id === id);
    if (!p) throw new UnknownPreferenceError(id);
    return p;
  }

  active(): Preference[] {
    return this.list().filter((p) => p.status === "active");
  }

  /** The block main turns get now (budget and token counter from the caller: the served model's tokenizer). */
  plan(budget: number, countTokens: (text: string) => number): PlannedBlock {
    return planBlock(this.active(), budget, countTokens);
  }

  /**
   * A new preference, or, when one with the same text exists, that one gains the turn (and a
   * learned one comes back: the user had to say it again).
   */
  create(text: string, source: Preference["source"], turnIds: string[] = []): Preference {
    const now = this.clock().toISOString();
    const same = this.list().find((p) => preferenceKey(p.text) === preferenceKey(text));
    if (same) {
      return this.mutate(same.id, (p, log) => {
        for (const t of turnIds)
          if (!p.turnIds.includes(t)) {
            p.turnIds.push(t);
            log({ kind: "turn", to: t, by: "user" });
          }
        if (p.status === "learned") this.setStatus(p, "active", log, "user", "the same hint was given again");
      });
    }
    const p: Preference = {
      id: `pref-${crypto.randomUUID().slice(0, 8)}`,
      text: preferenceTextOf(text),
      source,
      status: "active",
      createdAt: now,
      updatedAt: now,
      turnIds: [...turnIds],
      history: [{ at: now, by: "user", kind: "created", to: preferenceTextOf(text) }],
    };
    this.store.updateState((d) => {
      d.preferences.push(p);
    });
    this.emit({ id: p.id, change: "created", preference: p });
    return p;
  }

  /**
   * A preference the user makes from a turn: a judge's hint they accept (source "judge" when the
   * text is one of the judge's hints for that turn), or their own words about it ("manual").
   */
  createFromTurn(text: string, turnId: string): Preference {
    if (!this.store.turnEntry(turnId)) throw new UnknownTurnError(turnId);
    const judged = this.store.readJudge(turnId)?.hints ?? [];
    return this.create(text, judged.some((h) => preferenceKey(h) === preferenceKey(text)) ? "judge" : "manual", [turnId]);
  }

  /** A change by the user (PATCH). */
  patch(id: string, change: { text?: string; status?: PreferenceStatus }): Preference {
    return this.mutate(id, (p, log) => {
      if (change.text !== undefined && change.text !== p.text) {
        log({ kind: "text", from: p.text, to: change.text, by: "user" });
        p.text = change.text;
      }
      if (change.status !== undefined) this.setStatus(p, change.status, log, "user");
    });
  }

  /** A status change by the learning loop (retirement, forgetting), with why and the check behind it. */
  setByLoop(id: string, status: PreferenceStatus, reason: string, check: PreferenceCheck): Preference {
    return this.mutate(
      id,
      (p, log) => {
        p.lastCheck = check;
        this.setStatus(p, status, log, "loop", reason);
      },
      "checked",
    );
  }

  /** Records a check that changed nothing. */
  recordCheck(id: string, check: PreferenceCheck): Preference {
    return this.mutate(
      id,
      (p) => {
        p.lastCheck = check;
      },
      "checked",
    );
  }

  /** Reverts the latest text or status change (or the last turn added); returns the preference. */
  undo(id: string): Preference {
    const p = this.get(id);
    const last = [...p.history].reverse().find((h) => h.kind === "text" || h.kind === "status");
    if (!last) throw new NothingToUndoError(id);
    return this.mutate(id, (q, log) => {
      if (last.kind === "text" && typeof last.from === "string") {
        log({ kind: "text", from: q.text, to: last.from, by: "user", reason: "undo" });
        q.text = last.from;
      } else if (last.kind === "status" && typeof last.from === "string") {
        this.setStatus(q, last.from as PreferenceStatus, log, "user", "undo");
      }
    });
  }

  /** Moves a preference to the trash (restore() brings it back). */
  remove(id: string): void {
    const p = this.get(id);
    this.store.updateState((d) => {
      d.preferences = d.preferences.filter((x) => x.id !== id);
      d.preferenceTrash = [...d.preferenceTrash.filter((x) => x.id !== id), p].slice(-TRASH_SIZE);
    });
    this.emit({ id, change: "deleted", preference: null });
  }

  trash(): Preference[] {
    return this.store.state.preferenceTrash;
  }

  restore(id: string): Preference {
    const p = this.store.state.preferenceTrash.find((x) => x.id === id);
    if (!p) throw new UnknownPreferenceError(id);
    const now = this.clock().toISOString();
    const back: Preference = { ...p, updatedAt: now, history: [...p.history, { at: now, by: "user", kind: "restored" }] };
    this.store.updateState((d) => {
      d.preferenceTrash = d.preferenceTrash.filter((x) => x.id !== id);
      d.preferences.push(back);
    });
    this.emit({ id, change: "restored", preference: back });
    return back;
  }

  /** The preferences a turn's hint made or joined. */
  ofTurn(turnId: string): Preference[] {
    return this.list().filter((p) => p.turnIds.includes(turnId));
  }

  private setStatus(
    p: Preference,
    status: PreferenceStatus,
    log: (c: Omit<PreferenceChange, "at">) => void,
    by: PreferenceChange["by"],
    reason?: string,
  ): void {
    if (p.status === status) return;
    log({ kind: "status", from: p.status, to: status, by, ...(reason ? { reason } : {}) });
    p.status = status;
    if (status === "learned") p.learnedAt = this.clock().toISOString();
    else delete p.learnedAt;
  }

  private mutate(
    id: string,
    fn: (p: Preference, log: (c: Omit<PreferenceChange, "at">) => void) => void,
    change: PreferenceEvent["change"] = "updated",
  ): Preference {
    const cur = this.get(id);
    const next: Preference = structuredClone(cur);
    const now = this.clock().toISOString();
    let changed = false;
    fn(next, (c) => {
      next.history.push({ at: now, ...c });
      changed = true;
    });
    if (changed) next.updatedAt = now;
    this.store.updateState((d) => {
      d.preferences = d.preferences.map((x) => (x.id === id ? next : x));
    });
    this.emit({ id, change: changed ? (change === "checked" ? "updated" : change) : change, preference: next });
    return next;
  }

  private emit(e: PreferenceEvent): void {
    this.bus.emit("preferences", e);
  }
}

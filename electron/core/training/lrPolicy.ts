import type { LrEvent, LrEventKind, TrainingStatus } from "../store/state.js";
import type { Store } from "../store/store.js";

/**
 * The learning-rate policy, written once: the scale halves after a rejected candidate and after
 * a rollback by the watch (train on from there with a smaller step), down to a floor; a publish,
 * a checkpoint (or the base model) served by hand, and the loop starting again set it back to 1;
 * a rejected import leaves it as it is. Each change is an event in the store
 * (state.json `training.lrEvents`): the loop reads its current scale there, and the eval's replay
 * (samplesExport.ts, through lrScalesOf) reads there the scale each checkpoint's run used, so both
 * see the same rate, a hand activation included.
 */

/** Smallest learning-rate scale after repeated halvings (the supervisor's default floor). */
export const MIN_LR_SCALE = 1 / 64;

/** Most events kept (one a run at most; the oldest go first). */
const MAX_EVENTS = 4096;

export function halvedLrScale(scale: number, floor = MIN_LR_SCALE): number {
  return Math.max(scale / 2, floor);
}

/** The rule: the scale after an event of this kind. */
export function lrScaleAfter(scale: number, kind: LrEventKind, floor = MIN_LR_SCALE): number {
  switch (kind) {
    case "rejected":
    case "reverted":
      return halvedLrScale(scale, floor);
    case "importRejected":
      return scale;
    case "published":
    case "imported":
    case "activated":
    case "restart":
      return 1;
  }
}

/** Events that commit a checkpoint: the run that made it used the scale before the event. */
const COMMITS: ReadonlySet<LrEventKind> = new Set(["published", "rejected", "imported", "importRejected"]);

/** The scale now: the last event's (1 before any). */
export function currentLrScale(events: readonly LrEvent[]): number {
  return events.at(-1)?.scale ?? 1;
}

/** The scale each checkpoint's run used, by checkpoint number, read from the events. */
export function lrScalesOfEvents(events: readonly LrEvent[]): Map<number, number> {
  const scales = new Map<number, number>();
  let scale = 1;
  for (const ev of events) {
    if (ev.checkpoint !== null && COMMITS.has(ev.kind)) scales.set(ev.checkpoint, scale);
    scale = ev.scale;
  }
  return scales;
}

/** What the policy reads from a checkpoint's history (a data dir from before the event log). */
export interface LrHistoryEntry {
  n: number;
  createdAt: string;
  verdict: string;
  reverted?: { at: string } | null;
}

/**
 * The events a checkpoint history implies, in time order, for a data dir from before the event
 * log: each candidate's commit (a reverted checkpoint was published first) and each rollback.
 * What it cannot see (a hand activation, a restart) it leaves out.
 */
export function lrEventsFromHistory(history: readonly LrHistoryEntry[], floor = MIN_LR_SCALE): LrEvent[] {
  const moments: Array<{ at: string; n: number | null; checkpoint: number; kind: LrEventKind }> = [
    ...history.map((c) => ({ at: c.createdAt, n: c.n, checkpoint: c.n, kind: c.verdict === "rejected" ? ("rejected" as const) : ("published" as const) })),
    ...history.flatMap((c) => (c.reverted ? [{ at: c.reverted.at, n: null, checkpoint: c.n, kind: "reverted" as const }] : [])),
  ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : (a.n ?? Infinity) - (b.n ?? Infinity)));
  let scale = 1;
  return moments.map((m) => {
    scale = lrScaleAfter(scale, m.kind, floor);
    return { at: m.at, kind: m.kind, checkpoint: m.checkpoint, scale };
  });
}

/**
 * The scale each checkpoint's run used: from the store's event log when there is one (`log`),
 * else as the checkpoints' history implies it.
 */
export function lrScalesOf(history: readonly LrHistoryEntry[], floor = MIN_LR_SCALE, log?: readonly LrEvent[]): Map<number, number> {
  return lrScalesOfEvents(log ?? lrEventsFromHistory(history, floor));
}

/** The store's event log; undefined in a data dir from before it. */
export function lrEventsOf(training: TrainingStatus): readonly LrEvent[] | undefined {
  return training.lrEvents;
}

/** The loop's side of the policy: records each event in the store and reads the scale from there. */
export class LrPolicy {
  constructor(
    private readonly store: Store,
    private readonly floor = MIN_LR_SCALE,
  ) {}

  get scale(): number {
    return currentLrScale(this.store.state.training.lrEvents ?? []);
  }

  /**
   * On start: a data dir from before the event log gets the events its checkpoints imply; the
   * loop starts at the full step, as it always has (a 'restart' event when the log says otherwise).
   */
  begin(history: readonly LrHistoryEntry[]): number {
    if (this.store.state.training.lrEvents === undefined && history.length > 0) {
      const seeded = lrEventsFromHistory(history, this.floor);
      this.store.updateState((d) => {
        d.training.lrEvents = seeded.slice(-MAX_EVENTS);
      });
    }
    return this.scale === 1 ? 1 : this.record("restart", null);
  }

  /** Records an event; returns the scale from now on. */
  record(kind: LrEventKind, checkpoint: number | null): number {
    const scale = lrScaleAfter(this.scale, kind, this.floor);
    const ev: LrEvent = { at: new Date().toISOString(), kind, checkpoint, scale };
    this.store.updateState((d) => {
      const events = (d.training.lrEvents ??= []);
      events.push(ev);
      if (events.length > MAX_EVENTS) events.splice(0, events.length - MAX_EVENTS);
    });
    return scale;
  }
}

import fs from "node:fs";
import path from "node:path";
import type { ChatMessage } from "../api/chatTypes.js";
import type { EventBus } from "./events.js";
import { rewardOf, type Store, type TurnEntry } from "../store/store.js";
import type { TurnRecord } from "../store/records.js";
import type { Sample } from "../../../models/samples/sample.js";
import { isHeldBack } from "./heldBack.js";
import { promotedTurn, type Promotion } from "./atLeastOne.js";
import { answerEditHint, answerEditSample } from "../../../models/samples/answerEdit.js";
import { isReplacedAnswer, mainSiblings, REGENERATE_REWARD } from "./branches.js";

/**
 * A main turn turned into a training sample once its reward and/or hint is known (method.md,
 * combined method's table): hint and ±1 → both terms; hint only → OPD; ±1 only → RL;
 * neither (or reward 0 without a hint) → no sample.
 *
 * Precedence: explicit thumbs override the judge's reward; an explicit hint overrides the
 * judge's hints, and explicit thumbs without a hint drop the judge's hints too (the user
 * judged the answer themselves). A hint-only feedback keeps the judge's reward, as the
 * store's rewardOf does, so the sample matches what the UI shows.
 *
 * A turn served with a preference block also makes a sample with neither (context distillation:
 * the teacher is the policy with the block, the student the policy on the client's prompt alone),
 * and every sample of such a turn trains the student on the client's prompt.
 *
 * Two exceptions: a held-back turn (rollout/heldBack.ts) makes no sample, ever; and a finished
 * session whose main turns all scored 0 makes one from its best-judged turn, with a weak reward
 * (rollout/atLeastOne.ts). A stopped answer (the user cut it off) makes no sample either.
 *
 * An answer the user rewrote (an answer edit, method.md "Answer edits") makes two: the edit's own
 * (id `<turnId>:edit`: the edit's tokens are the target, reward +1 and the edit as the teacher's
 * hint), and the original's, which the edit judges as explicit feedback does: reward −1 unless the
 * user's thumbs say otherwise, the edit as its hint unless the user wrote one.
 */
export interface PoolItem {
  /** the turn id (one sample per turn) */
  id: string;
  sessionId: string;
  /** adapter version that served the turn ("base" when none) */
  adapter: string;
  /** ±1 for the RL term (the at-least-one rule's weak reward: in [0.25, 0.5)), null when the turn only has a hint */
  reward: number | null;
  rewardSource: "thumbs" | "judge" | "atLeastOne" | "edit" | "regenerate" | null;
  /** OPD hint candidates, shortest first for the judge's; [] when none */
  hints: string[];
  hintSource: "feedback" | "judge" | "edit" | null;
  /** the prompt's messages as received (the teacher prompt appends the hint to the last user message) */
  messages: ChatMessage[];
  /** the preferences whose block the turn was served with (context distillation), [] when none */
  preferenceIds: string[];
  /**
   * The trainer's sample (live form): served prompt/response token ids and log-probs, `reward`,
   * `hint` (first candidate) with `hints` (all, when more than one) and `messages`.
   */
  sample: Sample;
}

/**
 * The sample pool the training supervisor consumes. A claimed sample is not ready; `commit`
 * marks a run's samples as trained for good, `release` returns them (the run failed). Claims
 * live in memory only, so after a crash every claimed-but-uncommitted sample is ready again.
 */
export interface SamplePool {
  /** samples not yet trained nor claimed, oldest turn first */
  ready(): PoolItem[];
  readonly readyCount: number;
  /** Throws when an id is unknown, not ready, or already claimed/used. */
  claim(ids: readonly string[], runId: string): void;
  /** Durable (fsynced) before it returns. Unknown run ids are ignored. */
  commit(runId: string): void;
  release(runId: string): void;
  /** Calls `fn` when the ready count (or a ready sample) changed. Returns an unsubscribe. */
  onChange(fn: (readyCount: number) => void): () => void;
}

/** The id of an answer edit's sample: its turn's id with this suffix (turn ids are UUIDs). */
export const EDIT_SAMPLE_SUFFIX = ":edit";

/** The turn a sample id names (an answer edit's sample names its turn with a suffix). */
export function turnIdOfSample(id: string): string {
  return id.endsWith(EDIT_SAMPLE_SUFFIX) ? id.slice(0, -EDIT_SAMPLE_SUFFIX.length) : id;
}

/**
 * Decides what sample a turn makes from its feedback, judge result and answer edit; null = none.
 * `edit` reads the user's rewrite of the answer (only called when the entry has one); `replaced`
 * says whether a regenerate replaced the answer and the user did not go back to it (asked only
 * when nothing else gave a ±1: a weak negative, branches.ts).
 */
export function sampleTerms(
  e: Pick<TurnEntry, "feedback" | "judge"> & { answerEdit?: unknown },
  judgeHints: () => string[],
  edit: () => string | null = () => null,
  replaced: () => boolean = () => false,
): { reward: number | null; rewardSource: PoolItem["rewardSource"]; hints: string[]; hintSource: PoolItem["hintSource"] } | null {
  const r = rewardOf(e);
  let reward: number | null = r.reward === 1 || r.reward === -1 ? r.reward : null;
  let rewardSource: PoolItem["rewardSource"] = r.source;
  // The user rewrote the answer: explicit feedback, a thumbs down unless their thumbs say otherwise; the judge is overruled.
  const edited = e.answerEdit ? edit() : null;
  if (edited !== null && !e.feedback?.thumbs) {
    reward = -1;
    rewardSource = "edit";
  }
  if (reward === null && replaced()) {
    reward = REGENERATE_REWARD;
    rewardSource = "regenerate";
  }
  let hints: string[] = [];
  let hintSource: PoolItem["hintSource"] = null;
  if (e.feedback?.hint) {
    hints = [e.feedback.hint];
    hintSource = "feedback";
  } else if (edited !== null) {
    hints = [answerEditHint(edited)];
    hintSource = "edit";
  } else if (!e.feedback?.thumbs && e.judge) {
    hints = judgeHints();
    if (hints.length) hintSource = "judge";
  }
  if (reward === null && hints.length === 0) return null;
  return { reward, rewardSource: reward === null ? null : rewardSource, hints, hintSource };
}

/** Whether the user stopped the turn's answer (recorded by the rollout): a cut-off answer is never trained on. */
export function isStopped(t: TurnRecord): boolean {
  return t.stopped === true;
}

/**
 * The sample of a turn's answer edit (models/samples/answerEdit.ts): the edit's tokens the target.
 * null when the turn has no edit, is not a main turn or is held back (its prompt is the gate's).
 */
export function editSampleFor(store: Store, e: TurnEntry, heldBackShare = store.settings.heldBackShare): Sample | null {
  if (e.type !== "main" || !e.answerEdit || isHeldBack(e, heldBackShare)) return null;
  const edit = store.readAnswerEdit(e.turnId);
  return edit ? answerEditSample(store.readTurn(e.turnId), edit.text) : null;
}

/** The terms of an answer edit's own sample: the user's answer, +1 and itself as the hint. */
function editTerms(sample: Sample): { reward: 1; rewardSource: "edit"; hints: string[]; hintSource: "edit" | null } {
  return { reward: 1, rewardSource: "edit", hints: sample.hint ? [sample.hint] : [], hintSource: sample.hint ? "edit" : null };
}

/**
 * The trainer's sample (live form) of a turn with its terms: the served prompt/response token
 * ids and log-probs, the reward, the hints (with the messages the teacher's prompt is built
 * from) and the prompt's format. null when it would train nothing.
 */
export function turnSample(
  t: TurnRecord,
  terms: { reward: number | null; hints: string[] },
  opts: { distill?: boolean } = {},
): { sample: Sample; hints: string[] } | null {
  if (t.promptTokens.length === 0 || t.responseTokens.length === 0 || isStopped(t)) return null;
  // A hint needs a user message to append to; without one only the RL term is possible.
  const hints = t.messages.some((m) => m.role === "user") ? terms.hints : [];
  // Context distillation: the student learns on the client's prompt what the block made the policy answer.
  const distill = (opts.distill ?? true) && t.preferences !== undefined && (t.clientPromptTokens?.length ?? 0) > 0;
  if (terms.reward === null && hints.length === 0 && !distill) return null;
  // Served log-probs were under the prompt with the block, not the student's: the trainer recomputes lp_old then.
  const logprobsOk = !distill && t.tokenLogprobs.length === t.responseTokens.length && t.tokenLogprobs.every((x) => Number.isFinite(x) && x <= 0);
  const sample: Sample = {
    prompt_tokens: distill ? t.clientPromptTokens! : t.promptTokens,
    ...(distill ? { teacher_prompt_tokens: t.promptTokens } : {}),
    response_tokens: t.responseTokens,
    ...(logprobsOk ? { logprobs: t.tokenLogprobs } : {}),
    ...(terms.reward !== null ? { reward: terms.reward } : {}),
    ...(hints.length ? { hint: hints[0], messages: t.messages as Sample["messages"] } : {}),
    ...(hints.length > 1 ? { hints } : {}),
    ...(t.format ? { format: t.format } : {}),
  };
  return { sample, hints };
}

/** The terms of a turn that only distills its preference block: no reward, no hint. */
export function distillTerms(): { reward: null; rewardSource: null; hints: string[]; hintSource: null } {
  return { reward: null, rewardSource: null, hints: [], hintSource: null };
}

/** Whether a turn distills its preference block under this method (binary RL has no teacher term). */
export function distills(e: Pick<TurnEntry, "preferenceBlock">, method: string): boolean {
  return e.preferenceBlock && method !== "binary";
}

/** The terms of a session's promoted turn (atLeastOne.ts): its weak reward, no hint. */
export function promotedTerms(p: Promotion): { reward: number; rewardSource: "atLeastOne"; hints: string[]; hintSource: null } {
  return { reward: p.reward, rewardSource: "atLeastOne", hints: [], hintSource: null };
}

/** A turn's terms as the store has them: its feedback, judge result, answer edit and the regenerates of its branch. */
export function storedTerms(store: Store, e: TurnEntry): ReturnType<typeof sampleTerms> {
  return sampleTerms(
    e,
    () => store.readJudge(e.turnId)?.hints ?? [],
    () => store.readAnswerEdit(e.turnId)?.text ?? null,
    () => isReplacedAnswer(store, e),
  );
}

/**
 * The sample a turn makes by the pool's rules, held-back slice and at-least-one promotion
 * included (what `clawrl eval` exports for replay): null when it makes none.
 */
export function samplesFor(
  store: Store,
  e: TurnEntry,
): { sample: Sample; terms: { reward: number | null; rewardSource: PoolItem["rewardSource"]; hints: string[]; hintSource: PoolItem["hintSource"] } } | null {
  if (e.type !== "main" || isHeldBack(e, store.settings.heldBackShare)) return null;
  let terms: ReturnType<typeof sampleTerms> | ReturnType<typeof promotedTerms> | ReturnType<typeof distillTerms> | null = storedTerms(store, e);
  if (!terms) {
    const p = promotedTurn(store, e.sessionId, store.settings.heldBackShare, (x) => storedTerms(store, x) !== null);
    if (p?.turnId === e.turnId) terms = promotedTerms(p);
  }
  const distill = distills(e, store.settings.learningMethod);
  if (!terms && distill) terms = distillTerms();
  if (!terms) return null;
  const made = turnSample(store.readTurn(e.turnId), terms, { distill });
  return made ? { sample: made.sample, terms: { ...terms, hints: made.hints } } : null;
}

/** The sample a pool id names (a turn's, or its answer edit's `<turnId>:edit`) by the pool's rules; null when it makes none. */
export function sampleById(store: Store, id: string): Sample | null {
  const e = store.turnEntry(turnIdOfSample(id));
  if (!e) return null;
  return id.endsWith(EDIT_SAMPLE_SUFFIX) ? editSampleFor(store, e) : (samplesFor(store, e)?.sample ?? null);
}

/**
 * The durable pool: samples are derived from the trajectories log (turns, feedback, judge
 * lines), so a restart rebuilds them; trained ids are appended to `training/used.jsonl`
 * (one fsynced line per committed run: `{runId, time, ids}`). Feedback or judge changes on a
 * turn not yet trained update its sample.
 */
export class TurnSamplePool implements SamplePool {
  private readonly used = new Set<string>();
  /** runId → claimed ids */
  private readonly claims = new Map<string, string[]>();
  private readonly claimedIds = new Set<string>();
  /** turnId → sample, for every main turn that makes one and is not used (claimed ones included) */
  private readonly items = new Map<string, PoolItem>();
  /** sessionId → its promoted turn (at-least-one rule), for closed sessions where all main turns scored 0 */
  private readonly promoted = new Map<string, Promotion>();
  private heldBackShare: number;
  private method: string;
  private readonly listeners = new Set<(n: number) => void>();
  private readonly offs: Array<() => void> = [];
  readonly usedFile: string;

  constructor(
    private readonly store: Store,
    bus: EventBus | null,
    opts: { usedFile?: string } = {},
  ) {
    this.usedFile = opts.usedFile ?? path.join(store.dataDir, "training", "used.jsonl");
    this.heldBackShare = store.settings.heldBackShare;
    this.method = store.settings.learningMethod;
    this.loadUsed();
    for (const s of store.sessions()) this.promote(s.id);
    for (const e of store.turnEntries()) this.refresh(e.turnId, false);
    if (bus) {
      const on = (p: { turnId: string }) => this.update(p.turnId);
      this.offs.push(bus.on("feedback", on), bus.on("judge", on), bus.on("answerEdit", on));
      // A turn served with a preference block is a distillation sample from the moment it lands;
      // a regenerated answer changes what its earlier siblings teach (branches.ts).
      this.offs.push(
        bus.on("turn", (p) => {
          const e = this.store.turnEntry(p.turn.turnId);
          if (e?.preferenceBlock) this.update(e.turnId);
          if (e?.type === "main") for (const s of mainSiblings(this.store, e)) if (s.turnId !== e.turnId) this.update(s.turnId);
        }),
      );
      // A deleted session's turns leave the store: drop their samples.
      this.offs.push(
        bus.on("sessionDeleted", () => this.prune()),
        bus.on("turnsDeleted", () => this.prune()),
      );
      // A session that closes (or opens again) may gain (or lose) its promoted turn.
      this.offs.push(bus.on("session", (p) => (p.change === "closed" || p.change === "reopened" ? this.updateSession(p.session.id) : undefined)));
      // Another branch shown (the user went back to an answer a regenerate replaced, or away from it).
      this.offs.push(bus.on("session", (p) => (p.change === "closed" || p.change === "reopened" ? undefined : this.updateBranches(p.session.id))));
      // Another held-back share changes which turns train.
      this.offs.push(
        bus.on("settings", (p) => {
          // Binary RL has no teacher: turns that only distill a preference block make no sample under it.
          const distillChanged = (p.settings.learningMethod === "binary") !== (this.method === "binary");
          this.method = p.settings.learningMethod;
          if (p.settings.heldBackShare === this.heldBackShare && !distillChanged) return;
          this.heldBackShare = p.settings.heldBackShare;
          const before = this.readyCount;
          for (const s of store.sessions()) this.promote(s.id);
          let changed = false;
          for (const e of store.turnEntries()) changed = this.refresh(e.turnId, true) || changed;
          if (changed || this.readyCount !== before) this.notify();
        }),
      );
    }
  }

  close(): void {
    for (const off of this.offs.splice(0)) off();
    this.listeners.clear();
  }

  private loadUsed(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.usedFile, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw new Error(`cannot read the sample pool's used list ${this.usedFile}: ${(err as Error).message}`, { cause: err });
    }
    // A torn last line (crash mid-commit: that run never committed) is cut, so the next commit starts on a line of its own.
    const end = text.lastIndexOf("\n") + 1;
    if (end < text.length) {
      fs.truncateSync(this.usedFile, Buffer.byteLength(text.slice(0, end)));
      text = text.slice(0, end);
    }
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      try {
        const r = JSON.parse(line) as { ids?: unknown };
        if (Array.isArray(r.ids)) for (const id of r.ids) if (typeof id === "string") this.used.add(id);
      } catch {
        // A damaged line: skipped, as if that run never committed (its samples train again).
      }
    }
  }

  /** Re-reads one turn's sample (after feedback or a judge result) and notifies if it changed. */
  update(turnId: string): void {
    const sessionId = this.store.turnEntry(turnId)?.sessionId;
    if (sessionId !== undefined && this.store.session(sessionId)?.closed) return this.updateSession(sessionId);
    const before = this.readyCount;
    const changed = this.refresh(turnId, true);
    if (changed || this.readyCount !== before) this.notify();
  }

  /** Re-reads a session's samples (its promoted turn may move) and notifies if they changed. */
  updateSession(sessionId: string): void {
    const before = this.readyCount;
    this.promote(sessionId);
    let changed = false;
    for (const e of this.store.sessionTurns(sessionId)) changed = this.refresh(e.turnId, true) || changed;
    if (changed || this.readyCount !== before) this.notify();
  }

  /**
   * Re-reads the samples of a session's turns that have siblings, or had (a regenerate's weak
   * negative follows the active path, and goes when the regenerate is deleted).
   */
  updateBranches(sessionId: string): void {
    const turns = this.store.sessionTurns(sessionId);
    const count = new Map<string | null, number>();
    for (const e of turns) if (e.type === "main" && e.fromUi) count.set(e.parentTurnId, (count.get(e.parentTurnId) ?? 0) + 1);
    const stale = (e: TurnEntry) => (count.get(e.parentTurnId) ?? 0) > 1 || this.items.get(e.turnId)?.rewardSource === "regenerate";
    const before = this.readyCount;
    let changed = false;
    for (const e of turns) if (e.type === "main" && e.fromUi && stale(e)) changed = this.refresh(e.turnId, true) || changed;
    if (changed || this.readyCount !== before) this.notify();
  }

  /**
   * Decides the session's promoted turn (atLeastOne.ts). Once a turn of the session is trained
   * or being trained, the decision stays: a session yields its one promoted sample once.
   */
  private promote(sessionId: string): void {
    const turns = this.store.sessionTurns(sessionId);
    if (turns.some((e) => this.used.has(e.turnId) || this.claimedIds.has(e.turnId))) return;
    const p = promotedTurn(this.store, sessionId, this.heldBackShare, (e) => storedTerms(this.store, e) !== null);
    if (p) this.promoted.set(sessionId, p);
    else this.promoted.delete(sessionId);
  }

  /** The promoted turn of a session (at-least-one rule), if any. */
  promotion(sessionId: string): Promotion | undefined {
    return this.promoted.get(sessionId);
  }

  /** Returns true when the turn's ready samples (its own, its answer edit's) changed. */
  private refresh(turnId: string, compare: boolean): boolean {
    const e = this.store.turnEntry(turnId);
    const own = this.refreshItem(turnId, compare, () => (e && e.type === "main" ? this.build(e) : null));
    const edit = this.refreshItem(turnId + EDIT_SAMPLE_SUFFIX, compare, () => (e ? this.buildEdit(e) : null));
    return own || edit;
  }

  private refreshItem(id: string, compare: boolean, make: () => PoolItem | null): boolean {
    const prev = this.items.get(id);
    // Trained or claimed samples keep what they were trained / are being trained on.
    if (this.used.has(id) || this.claimedIds.has(id)) return false;
    const item = make();
    if (!item) {
      this.items.delete(id);
      return prev !== undefined;
    }
    this.items.set(id, item);
    return !compare || !prev || JSON.stringify(prev.sample) !== JSON.stringify(item.sample);
  }

  /** An answer edit's own sample: the edit's tokens are the target. */
  private buildEdit(e: TurnEntry): PoolItem | null {
    const sample = editSampleFor(this.store, e, this.heldBackShare);
    if (!sample) return null;
    const terms = editTerms(sample);
    const t = this.store.readTurn(e.turnId);
    return {
      id: e.turnId + EDIT_SAMPLE_SUFFIX,
      sessionId: e.sessionId,
      adapter: t.adapter,
      ...terms,
      messages: t.messages,
      preferenceIds: [],
      sample,
    };
  }

  private build(e: TurnEntry): PoolItem | null {
    // Held back: never trained on (the gate and the watch check on these).
    if (isHeldBack(e, this.heldBackShare)) return null;
    let terms: ReturnType<typeof sampleTerms> | ReturnType<typeof promotedTerms> | ReturnType<typeof distillTerms> | null = storedTerms(this.store, e);
    const p = this.promoted.get(e.sessionId);
    if (!terms && p?.turnId === e.turnId) terms = promotedTerms(p);
    const distill = distills(e, this.store.settings.learningMethod);
    if (!terms && distill) terms = distillTerms();
    if (!terms) return null;
    const t = this.store.readTurn(e.turnId);
    const made = turnSample(t, terms, { distill });
    if (!made) return null;
    const { sample, hints } = made;
    return {
      id: e.turnId,
      sessionId: e.sessionId,
      adapter: t.adapter,
      reward: terms.reward,
      rewardSource: terms.rewardSource,
      hints,
      hintSource: hints.length ? terms.hintSource : null,
      messages: t.messages,
      preferenceIds: distill ? (t.preferences?.ids ?? []) : [],
      sample,
    };
  }

  private prune(): void {
    const before = this.readyCount;
    for (const id of [...this.items.keys()]) if (!this.store.turnEntry(turnIdOfSample(id)) && !this.claimedIds.has(id)) this.items.delete(id);
    if (this.readyCount !== before) this.notify();
  }

  ready(): PoolItem[] {
    return [...this.items.values()].filter((i) => !this.claimedIds.has(i.id));
  }

  get readyCount(): number {
    return this.items.size - this.claimedIds.size;
  }

  /** A sample by turn id (ready or claimed), or undefined. */
  get(id: string): PoolItem | undefined {
    return this.items.get(id);
  }

  isUsed(id: string): boolean {
    return this.used.has(id);
  }

  claim(ids: readonly string[], runId: string): void {
    if (this.claims.has(runId)) throw new Error(`run '${runId}' already holds a claim`);
    if (new Set(ids).size !== ids.length) throw new Error(`claim for run '${runId}' names a sample twice`);
    for (const id of ids) {
      if (this.used.has(id)) throw new Error(`sample ${id} is already trained`);
      if (this.claimedIds.has(id)) throw new Error(`sample ${id} is already claimed`);
      if (!this.items.has(id)) throw new Error(`unknown sample ${id}`);
    }
    this.claims.set(runId, [...ids]);
    for (const id of ids) this.claimedIds.add(id);
    if (ids.length) this.notify();
  }

  commit(runId: string): void {
    const ids = this.claims.get(runId);
    if (!ids) return;
    fs.mkdirSync(path.dirname(this.usedFile), { recursive: true });
    const fd = fs.openSync(this.usedFile, "a", 0o600);
    try {
      fs.writeSync(fd, `${JSON.stringify({ runId, time: new Date().toISOString(), ids })}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    this.claims.delete(runId);
    for (const id of ids) {
      this.claimedIds.delete(id);
      this.used.add(id);
      this.items.delete(id);
    }
  }

  release(runId: string): void {
    const ids = this.claims.get(runId);
    if (!ids) return;
    this.claims.delete(runId);
    for (const id of ids) this.claimedIds.delete(id);
    // Feedback may have changed while the run held them.
    for (const id of ids) this.refresh(turnIdOfSample(id), false);
    this.notify();
  }

  onChange(fn: (readyCount: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private notify(): void {
    const n = this.readyCount;
    for (const fn of [...this.listeners]) {
      try {
        fn(n);
      } catch (err) {
        console.error(`sample pool listener failed: ${(err as Error).message}`);
      }
    }
  }
}

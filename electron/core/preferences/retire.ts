import type { Token } from "node-llama-cpp";
import type { Engine } from "../inference/engine.js";
import type { EventBus } from "../rollout/events.js";
import { isHeldBack } from "../rollout/heldBack.js";
import type { TurnRecord } from "../store/records.js";
import type { Store } from "../store/store.js";
import { plainPrefix, renderBlock, withBlock } from "./block.js";
import type { Preference, PreferenceCheck } from "../api/preferenceSchema.js";
import type { PreferenceService } from "./service.js";

/** Newest held-back turns measured per preference: enough for a stable mean, bounded in time. */
const MAX_TURNS = 12;

export interface GapMeasure {
  /** mean over the answers' tokens of log p(a_t | prompt + preference) − log p(a_t | prompt), nats/token */
  gap: number;
  turns: number;
  tokens: number;
  adapter: string;
}

/**
 * How far the served adapter alone is from the adapter with the preference in its prompt, on
 * held-back turns (never trained on) that were served with it: the answers were sampled with the
 * block in the prompt, so the mean log-prob gap per token is a Monte Carlo estimate of
 * KL(policy with the preference ‖ policy without), the gap context distillation closes. Each
 * answer is scored under the client's prompt with only this preference's block, and under the
 * client's prompt alone, with the adapter served now. null when there are no such turns.
 */
export async function measureGap(
  store: Store,
  engine: Pick<Engine, "renderPrompt" | "scoreTokens" | "model" | "modelId">,
  pref: Preference,
  share: number,
  max = MAX_TURNS,
): Promise<GapMeasure | null> {
  const turns: TurnRecord[] = [];
  const entries = [...store.turnEntries()].filter((e) => e.type === "main" && e.preferenceBlock && isHeldBack(e, share));
  for (let i = entries.length - 1; i >= 0 && turns.length < max; i--) {
    const t = store.readTurn(entries[i].turnId);
    // Token ids are the served model's: turns another model answered (before a switch) cannot be scored here.
    if (t.model === engine.modelId && t.preferences?.ids.includes(pref.id) && t.clientPromptTokens && t.responseTokens.length > 0) turns.push(t);
  }
  if (turns.length === 0) return null;
  const block = renderBlock([pref]);
  let sum = 0;
  let tokens = 0;
  let adapter = "base";
  let measured = 0;
  for (const t of turns) {
    const r = t.responseTokens as Token[];
    let withPref: { adapter: string; logprobs: number[] };
    let without: { adapter: string; logprobs: number[] };
    try {
      const { student, teacher } = prompts(engine, t, pref, block);
      withPref = await engine.scoreTokens([...teacher, ...r]);
      without = await engine.scoreTokens([...student, ...r]);
    } catch (err) {
      // A turn that no longer fits the context (the block re-rendered, another model served) is left out.
      console.warn(`preference check: turn ${t.turnId} left out: ${(err as Error).message}`);
      continue;
    }
    measured++;
    adapter = without.adapter;
    const a = withPref.logprobs.slice(-r.length);
    const b = without.logprobs.slice(-r.length);
    for (let i = 0; i < r.length; i++) sum += a[i] - b[i];
    tokens += r.length;
  }
  return measured > 0 ? { gap: sum / tokens, turns: measured, tokens, adapter } : null;
}

/**
 * The student's and the teacher's prompts: as served when the block held this preference alone;
 * else both rendered again from the client's messages (the request's tools are not recorded, so
 * neither has them), the teacher with this preference's block only.
 */
function prompts(engine: Pick<Engine, "renderPrompt" | "model">, t: TurnRecord, pref: Preference, block: string): { student: Token[]; teacher: Token[] } {
  const served = t.clientPromptTokens as Token[];
  if (t.preferences?.ids.length === 1 && t.preferences.ids[0] === pref.id && t.preferences.block === block)
    return { student: served, teacher: t.promptTokens as Token[] };
  if (t.format === "completion") {
    const bos = engine.model.tokens.bos;
    const lead = bos !== null && served[0] === bos ? 1 : 0;
    return { student: served, teacher: [...served.slice(0, lead), ...engine.model.tokenize(plainPrefix(block), false), ...served.slice(lead)] };
  }
  const messages = t.messages;
  return { student: [...engine.renderPrompt({ messages }).tokens], teacher: [...engine.renderPrompt({ messages: withBlock(messages, block) }).tokens] };
}

/** The verdict of one measurement for a preference in `status`. */
export function verdictOf(
  status: Preference["status"],
  m: GapMeasure | null,
  s: { threshold: number; minTurns: number },
): { check: Omit<PreferenceCheck, "at">; next: Preference["status"] | null; reason: string } | null {
  if (status === "disabled") return null;
  if (!m || m.turns < s.minTurns) {
    return {
      check: { adapter: m?.adapter ?? "base", gap: m?.gap ?? 0, turns: m?.turns ?? 0, threshold: s.threshold, verdict: "too few turns" },
      next: null,
      reason: `${m?.turns ?? 0} held-back turns served with it; ${s.minTurns} needed`,
    };
  }
  const facts = `gap ${m.gap.toFixed(3)} nats/token on ${m.turns} held-back turns with adapter ${m.adapter}`;
  if (status === "active") {
    // The base model cannot have learned it: a block it ignores is not a learned preference.
    if (m.gap < s.threshold && m.adapter !== "base")
      return { check: { ...m, threshold: s.threshold, verdict: "learned" }, next: "learned", reason: `learned: ${facts} < ${s.threshold}` };
    return { check: { ...m, threshold: s.threshold, verdict: "not learned" }, next: null, reason: facts };
  }
  // Learned: back in the prompt only when clearly forgotten (twice the threshold), so it does not flap.
  if (m.gap > 2 * s.threshold)
    return { check: { ...m, threshold: s.threshold, verdict: "forgotten" }, next: "active", reason: `forgotten: ${facts} > ${2 * s.threshold}` };
  return { check: { ...m, threshold: s.threshold, verdict: "learned" }, next: null, reason: facts };
}

export interface CheckResult {
  id: string;
  text: string;
  status: Preference["status"];
  verdict: PreferenceCheck["verdict"];
  gap: number | null;
  turns: number;
  reason: string;
}

/**
 * Checks every active and learned preference against the adapter served now: retires the learned
 * ones (they leave the prompt), brings back forgotten ones. Runs after each adapter swap and on
 * request (POST /api/preferences/check); one check at a time.
 */
export class PreferenceChecker {
  private running: Promise<CheckResult[]> | null = null;
  private again = false;
  private readonly off: () => void;

  constructor(private readonly o: { store: Store; prefs: PreferenceService; bus: EventBus; engine: () => Engine | null }) {
    this.off = o.bus.on("swap", () => {
      void this.check().catch((err) => console.warn(`preference check failed: ${(err as Error).message}`));
    });
  }

  /** Runs a check (or joins the one running and then runs once more, so a new adapter is measured). */
  async check(): Promise<CheckResult[]> {
    if (this.running) {
      this.again = true;
      await this.running.catch(() => undefined);
      return this.check();
    }
    this.again = false;
    this.running = this.run();
    try {
      return await this.running;
    } finally {
      this.running = null;
    }
  }

  private async run(): Promise<CheckResult[]> {
    const engine = this.o.engine();
    if (!engine) return [];
    const s = this.o.store.settings;
    const out: CheckResult[] = [];
    for (const p of this.o.prefs.list()) {
      if (p.status === "disabled") continue;
      const m = await measureGap(this.o.store, engine, p, s.heldBackShare);
      const v = verdictOf(p.status, m, { threshold: s.preferenceLearnedGap, minTurns: s.preferenceCheckTurns });
      if (!v) continue;
      const check = { at: new Date().toISOString(), ...v.check };
      // The user may have changed it while it was measured: a status they set wins.
      const now = this.o.prefs.list().find((x) => x.id === p.id);
      if (!now || now.status !== p.status) continue;
      const after = v.next ? this.o.prefs.setByLoop(p.id, v.next, v.reason, check) : this.o.prefs.recordCheck(p.id, check);
      out.push({ id: p.id, text: p.text, status: after.status, verdict: check.verdict, gap: m?.gap ?? null, turns: m?.turns ?? 0, reason: v.reason });
    }
    return out;
  }

  /** Stops checking after swaps and waits for a check under way (it scores with the engine). */
  async close(): Promise<void> {
    this.off();
    await this.running?.catch(() => undefined);
  }
}

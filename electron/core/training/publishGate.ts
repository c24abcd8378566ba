import type { Evaluation } from "../../../trainer/protocol.js";
import type { FluencyMeasure, ProbePrompt } from "../inference/fluencyProbe.js";
import { firstNonFiniteTensor } from "../../../models/gguf/finiteWeights.js";
import { evalSets, probePrompts } from "./evalSets.js";
import { GATE_DEFAULTS, gateVerdict, type FluencyCheck, type GateResult } from "./gate.js";
import type { SupervisorContext, SupervisorOptions } from "./supervisorTypes.js";
import type { WorkerClient } from "./workerClient.js";

/** Judging a candidate the trainer holds (a trained run's or an import's): its figures, then the gate's verdict. */

/** The gate's figures from the trainer for the candidate it holds, against the adapter served now. */
export function evaluateCandidate(ctx: SupervisorContext, w: WorkerClient, runId: string): Promise<Evaluation> {
  const { o } = ctx;
  const serving = o.store.state.training.activeCheckpoint;
  const progress = ctx.track("scores");
  const servingAdapter = serving === null ? null : (o.checkpoints.get(serving)?.path ?? null);
  return w.request({ type: "evaluate", runId, servingAdapter, ...evalSets(o.store, o.evalTurns ?? 8) }, (m) => {
    if (m.type === "work") progress(m.done / m.total);
  });
}

/**
 * The publish gate's verdict on a candidate (gate.ts): the trainer's figures, then, for one
 * those let through, the fluency of its own answers (it costs sampling, so only then).
 */
export async function gateOf(ctx: SupervisorContext, ev: Evaluation, adapterPath: string): Promise<GateResult> {
  const opts = { ...GATE_DEFAULTS, ...ctx.o.gate };
  const gate = { ...gateVerdict(ev, opts), evaluationSeconds: ev.seconds };
  // A candidate with NaN or infinite weights would answer with nothing, whatever its figures say.
  const nonFinite = firstNonFiniteTensor(adapterPath);
  if (nonFinite !== null) return { ...gate, verdict: "rejected", reasons: [...gate.reasons, `tensor '${nonFinite}' holds NaN or infinite weights`] };
  if (gate.verdict !== "published" || !ctx.o.probe) return gate;
  const fluency = await measureFluency(ctx, ctx.o.probe, adapterPath, opts.fluencyMargin);
  const full = { ...gateVerdict(ev, opts, fluency.check), evaluationSeconds: ev.seconds };
  return fluency.error ? { ...full, verdict: "rejected", reasons: [...full.reasons, fluency.error] } : full;
}

/** The prompts the gate's fluency check samples now: a few recent and held-back ones (evalSets.ts probePrompts). */
function gateProbePrompts(o: SupervisorOptions): ProbePrompt[] {
  return probePrompts(o.store, o.probePrompts ?? 8, o.probeSamples ?? 4, o.probeMaxTokens ?? 64);
}

/**
 * Has the fluency probe sample and score, ahead, the base model's own answers to the prompts the
 * gate would pick now (they do not depend on the candidate), so that a run's fluency check
 * samples only the candidate's answers. Called while learning waits for samples (runLoop.ts
 * kick); the probe gives way to chat, and to the gate itself, and replaces its list on each call.
 */
export function prepareFluency(ctx: SupervisorContext): void {
  const probe = ctx.o.probe;
  if (!probe?.prepare || ctx.stopping) return;
  try {
    probe.prepare(gateProbePrompts(ctx.o));
  } catch (e) {
    // The turn log could not be read: the gate samples every answer itself, as it would have.
    console.warn(`the fluency probe's answers ahead: ${(e as Error).message}`);
  }
}

/**
 * The gate's fluency figures for a candidate: its own answers to a few recent and held-back
 * prompts (at the settings they were served with, fixed seeds), scored by the base model, vs
 * the base model's own answers. A candidate llama.cpp cannot run is rejected with the reason.
 */
async function measureFluency(
  ctx: SupervisorContext,
  probe: FluencyMeasure,
  adapterPath: string,
  margin: number,
): Promise<{ check: FluencyCheck | null; error?: string }> {
  const { o } = ctx;
  const prompts = gateProbePrompts(o);
  if (prompts.length === 0) return { check: null };
  try {
    // Sampling stops once the verdict is clear (sequentialFluency.ts), unless the supervisor asks for every answer.
    const sequential = o.probeSequential === false ? undefined : { margin };
    const c = await probe.compare(adapterPath, prompts, { onProgress: ctx.track("answers"), sequential });
    return {
      check: {
        candidate: c.candidate.meanLogprob,
        base: c.base.meanLogprob,
        answers: c.candidate.answers,
        tokens: c.candidate.tokens,
        seconds: c.seconds,
        baseSampled: c.baseSampled,
        ...(c.stoppedEarly !== undefined ? { stoppedEarly: c.stoppedEarly, planned: c.planned } : {}),
      },
    };
  } catch (e) {
    if (ctx.stopping) throw e;
    return { check: null, error: `its answers could not be sampled with llama.cpp: ${(e as Error).message.split("\n")[0]}` };
  }
}

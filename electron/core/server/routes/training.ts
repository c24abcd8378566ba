import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ApiError, badRequest, parseBody } from "../errors.js";
import type { Store, TurnView } from "../../store/store.js";
import type { TrainingSupervisor } from "../../training/supervisor.js";
import { trainedOn, type CheckpointEntry } from "../../training/checkpoints.js";
import type { SwapResult } from "../../inference/adapterGate.js";
import type {
  ActivateReply,
  CheckpointsReply,
  CheckpointView,
  RunNowReply,
  SwapView,
  TrainingHistoryPoint,
  TrainingReply,
  TrainingStatusView,
} from "../../api/training.js";

/** What is served now, for a checkpoint's view: the active checkpoint and the model's file. */
export interface ServingNow {
  active: number | null;
  modelPath: string | null;
}

/** An adapter swap as the replies give it. */
export function swapView(s: SwapResult): SwapView {
  return { pauseMs: s.pauseMs, drained: s.drained, version: s.version };
}

/** A checkpoint as the UI reads it (the contract: electron/core/api/training.ts CheckpointView). */
export function checkpointView(c: CheckpointEntry, now: ServingNow): CheckpointView {
  return {
    n: c.id,
    version: c.version,
    /** made by importing an adapter trained elsewhere (POST /api/checkpoints/import), not by the trainer */
    imported: c.runId.startsWith("import-"),
    model: c.model ?? null,
    forServedModel: now.modelPath !== null && trainedOn(c, now.modelPath),
    createdAt: c.createdAt,
    parent: c.parent,
    samples: c.samples,
    meanReward: c.meanReward,
    loss: c.loss,
    kl: c.kl,
    verdict: c.verdict,
    gate: c.gate,
    /** why and when the watch on the served adapter rolled it back (verdict "reverted"), else null */
    reverted: c.reverted ?? null,
    /** drift from the base model when it was made: mean KL(checkpoint || base) per token on recent prompts and held-back turns */
    klToBase: c.gate.klToBase ?? null,
    /** the gate's fluency figures: the base model's log-prob per token of its own answers vs of the base model's own */
    fluency: c.gate.fluency ?? null,
    totalSteps: c.totalSteps,
    swapPauseMs: c.swapPauseMs,
    pinned: c.pinned,
    active: c.id === now.active,
  };
}

function checkpointNumber(raw: string): number {
  if (!/^\d+$/.test(raw)) throw badRequest(`checkpoint number must be a positive integer, got '${raw}'`, "n");
  return Number(raw);
}

/** How many judged turns GET /api/training lists (the Training page's table). */
export const RECENT_JUDGED = 20;

/**
 * The newest turns that carry a verdict (judge votes, thumbs or a hint), newest first: what
 * the learner learns from. One pass over the in-memory index; only the listed turns are read.
 */
export function recentJudged(store: Store, limit = RECENT_JUDGED): TurnView[] {
  const ids: string[] = [];
  for (const e of store.turnEntries()) {
    if (e.judge || e.feedback?.thumbs || e.feedback?.hint) ids.push(e.turnId);
  }
  return ids
    .slice(-limit)
    .reverse()
    .map((id) => store.turnView(id));
}

/** What GET /api/training adds beside the supervisor: the judge's queue and the judged turns. */
export interface TrainingDetailDeps {
  store: Store;
  judgeQueue(): number;
}

/**
 * Checkpoints and training control: GET /api/checkpoints, POST /api/checkpoints/:n/activate
 * (n "base": serve the model with no adapter),
 * POST /api/checkpoints/:n/pin ({pinned?: boolean}, default true), POST /api/training/run
 * (202 started; 200 {started: false, running: true, training} while a run holds every ready
 * sample; 409 with the reason otherwise), POST /api/training/pause, POST /api/training/resume.
 */
export function registerTrainingRoutes(
  app: FastifyInstance,
  sup: TrainingSupervisor,
  list: () => CheckpointEntry[],
  serving: () => ServingNow,
  detail?: TrainingDetailDeps,
): void {
  app.get("/api/checkpoints", async (): Promise<CheckpointsReply> => {
    const now = serving();
    const items = list()
      .map((c) => checkpointView(c, now))
      .reverse();
    return { checkpoints: items, active: now.active === null ? null : `ckpt-${now.active}` };
  });

  // The Training page's detail: live status (with the judge queue), the metric history (one
  // point per candidate) and the latest judged turns with their votes and hints.
  app.get("/api/training", async (): Promise<TrainingReply<TurnView>> => {
    const history = list().map((c): TrainingHistoryPoint => ({
      n: c.id,
      at: c.createdAt,
      meanReward: c.meanReward,
      loss: c.loss,
      kl: c.kl,
      // Drift from the base model (the Training page's chart), with the gate's budget for it.
      klToBase: c.gate.klToBase?.recent ?? null,
      klToBaseHeldBack: c.gate.klToBase?.heldBack ?? null,
      driftBudget: c.gate.driftBudget ?? null,
      fluency: c.gate.fluency?.candidate ?? null,
      fluencyBase: c.gate.fluency?.base ?? null,
      verdict: c.verdict,
      swapPauseMs: c.swapPauseMs,
    }));
    const judgeQueue = detail ? detail.judgeQueue() : null;
    return { training: { ...sup.status(), judgeQueue }, history, recentJudged: detail ? recentJudged(detail.store) : [] };
  });

  app.post<{ Params: { n: string } }>("/api/checkpoints/:n/activate", async (req): Promise<ActivateReply> => {
    // "base": the model with no adapter, the last step of any rollback.
    const n = req.params.n === "base" ? null : checkpointNumber(req.params.n);
    // A CheckpointError (an unknown or unusable checkpoint) is answered by the server's one mapping.
    if (n === null) {
      const r = await sup.activateBase();
      return { checkpoint: null, swap: swapView(r.swap) };
    }
    const r = await sup.activate(n);
    return { checkpoint: checkpointView(r.checkpoint, serving()), swap: swapView(r.swap) };
  });

  app.post<{ Params: { n: string } }>("/api/checkpoints/:n/pin", async (req): Promise<{ checkpoint: CheckpointView }> => {
    const body = parseBody(z.looseObject({ pinned: z.unknown().optional() }), req.body, { optional: true });
    const n = checkpointNumber(req.params.n);
    const pinned = body.pinned === undefined ? true : body.pinned;
    if (typeof pinned !== "boolean") throw badRequest("'pinned' must be true or false", "pinned");
    return { checkpoint: checkpointView(sup.pin(n, pinned), serving()) };
  });

  app.post("/api/training/run", async (_req, reply) => {
    const r = sup.runNow();
    // Asked while a run holds every ready sample: not a fault, the run is what was asked for.
    if (!r.started && r.running)
      return reply
        .status(200)
        .send({ started: false, running: true, reason: r.reason, samplesWaiting: r.samplesWaiting, training: sup.status() } satisfies RunNowReply);
    if (!r.started)
      return reply.status(409).send(new ApiError(409, r.reason ?? "cannot start a run", "invalid_request_error", null, "nothing_to_train").toJSON());
    return reply.status(202).send({ started: true, samplesWaiting: r.samplesWaiting } satisfies RunNowReply);
  });

  app.post("/api/training/pause", async (): Promise<{ training: TrainingStatusView }> => {
    sup.pause();
    return { training: sup.status() };
  });

  app.post("/api/training/resume", async (): Promise<{ training: TrainingStatusView }> => {
    sup.resume();
    return { training: sup.status() };
  });
}

import type { CheckpointEntry, RevertInfo } from "./checkpoints.js";
import type { WatchFinding, WatchTarget } from "./serveWatch.js";
import type { SupervisorContext } from "./supervisorTypes.js";

/**
 * Rolls back by itself: the watch found the served checkpoint clearly worse than its parent.
 * Serves the parent (the base model when there is none, or it is gone or damaged), marks the
 * checkpoint 'reverted' with the reason, trains on from what is served now at half the step,
 * and tells the UI (status, SSE `revert`). The checkpoint, its samples and the turns it
 * answered are kept. A checkpoint trained on from it meanwhile is rolled back with it.
 * Runs under the supervisor's lock.
 */
export async function revertServed(ctx: SupervisorContext, target: WatchTarget, finding: WatchFinding): Promise<void> {
  const { o, st } = ctx;
  const chain = chainTo(ctx, target.checkpoint);
  if (!chain.includes(target.checkpoint)) return; // already rolled back or moved elsewhere
  let to: CheckpointEntry | null = null;
  let note = "";
  if (target.parent !== null) {
    try {
      to = o.checkpoints.verifyFiles(target.parent);
    } catch (e) {
      note = ` (checkpoint ${target.parent} cannot be served: ${(e as Error).message}; the base model is served instead)`;
    }
  }
  const at = new Date().toISOString();
  if (to) await ctx.serving.swapTo(to);
  else await ctx.serving.swapToBase();
  ctx.serving.disarmWatch();
  const info: RevertInfo = {
    at,
    reason: finding.reason + note,
    rule: finding.rule,
    to: to?.id ?? null,
    stats: { reward: finding.reward, fluency: finding.fluency },
  };
  o.checkpoints.markReverted(target.checkpoint, info);
  for (const id of chain.filter((x) => x !== target.checkpoint)) {
    o.checkpoints.markReverted(id, {
      at,
      reason: `trained on from checkpoint ${target.checkpoint}, which was rolled back: ${finding.reason}`,
      rule: "ancestor",
      to: to?.id ?? null,
    });
  }
  st.lrScale = ctx.lr.record("reverted", target.checkpoint);
  st.lastRevert = { ...info, checkpoint: target.checkpoint };
  console.warn(`rolled back checkpoint ${target.checkpoint} to ${to ? `checkpoint ${to.id}` : "the base model"}: ${info.reason}`);
  o.bus.emit("revert", { checkpoint: target.checkpoint, to: info.to, version: to?.version ?? "base", reason: info.reason, rule: info.rule, at });
  for (const id of chain) {
    const c = o.checkpoints.get(id);
    if (c) o.bus.emit("checkpoint", { checkpoint: { ...c } });
  }
  ctx.publishStatus();
  // Train on from what is served now.
  await ctx.trainer.trainOnFrom(to?.dir ?? null, to ? `checkpoint ${to.id}` : "a fresh adapter");
}

/** The served checkpoint and its ancestors up to `checkpoint` (the bad one, or one trained on from it while the watch decided). */
function chainTo(ctx: SupervisorContext, checkpoint: number): number[] {
  const { checkpoints, store } = ctx.o;
  const active = store.state.training.activeCheckpoint;
  const chain: number[] = [];
  for (let c = active === null ? undefined : checkpoints.get(active); c; c = c.parent === null ? undefined : checkpoints.get(c.parent)) {
    chain.push(c.id);
    if (c.id === checkpoint) break;
  }
  return chain;
}

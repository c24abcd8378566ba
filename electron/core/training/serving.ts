import type { SwapResult } from "../inference/adapterGate.js";
import type { CheckpointEntry } from "./checkpoints.js";
import type { ServeWatch, WatchTarget } from "./serveWatch.js";
import type { SupervisorOptions, TrainingLiveStatus } from "./supervisorTypes.js";

/**
 * What is served: the swap to a checkpoint or to the base model (engine, store, status, events),
 * and the watch on a checkpoint the loop put into service.
 */
export class Serving {
  constructor(
    private readonly o: SupervisorOptions,
    private readonly st: TrainingLiveStatus,
    readonly watch: ServeWatch | null,
  ) {}

  async swapToBase(): Promise<SwapResult> {
    const { o, st } = this;
    const r = await o.engine.swapAdapter(null, "base");
    o.store.updateState((d) => {
      d.training.activeCheckpoint = null;
      d.training.updatedAt = new Date().toISOString();
    });
    st.activeCheckpoint = null;
    st.lastSwap = { pauseMs: r.pauseMs, version: "base", at: new Date().toISOString() };
    o.bus.emit("swap", { version: "base", checkpoint: null, pauseMs: r.pauseMs, drained: r.drained, stragglers: r.stragglers });
    o.bus.emit("status", { adapter: "base" });
    return r;
  }

  async swapTo(entry: CheckpointEntry): Promise<SwapResult> {
    const { o, st } = this;
    const r = await o.engine.swapAdapter(entry.path, entry.version);
    o.store.updateState((d) => {
      d.training.activeCheckpoint = entry.id;
      d.training.updatedAt = new Date().toISOString();
    });
    o.checkpoints.update(entry.id, { swapPauseMs: r.pauseMs });
    st.activeCheckpoint = entry.id;
    st.lastSwap = { pauseMs: r.pauseMs, version: entry.version, at: new Date().toISOString() };
    o.bus.emit("swap", { version: entry.version, checkpoint: entry.id, pauseMs: r.pauseMs, drained: r.drained, stragglers: r.stragglers });
    o.bus.emit("status", { adapter: entry.version });
    o.checkpoints.applyRetention();
    return r;
  }

  /** The watch on a checkpoint the loop put into service goes on after a restart. */
  resumeWatch(): void {
    const w = this.o.store.state.training.watch as WatchTarget | null | undefined;
    if (w && this.watch && w.checkpoint === this.o.store.state.training.activeCheckpoint) this.watch.arm(w);
  }

  /** Starts the watch on a checkpoint the loop just put into service, against the one it replaced. */
  armWatch(entry: CheckpointEntry): void {
    if (!this.watch) return;
    const parent = entry.parent;
    const target: WatchTarget = {
      checkpoint: entry.id,
      version: entry.version,
      parent,
      parentVersion: parent === null ? "base" : (this.o.checkpoints.get(parent)?.version ?? `ckpt-${parent}`),
      since: new Date().toISOString(),
    };
    this.watch.arm(target);
    this.o.store.updateState((d) => {
      d.training.watch = target;
    });
  }

  disarmWatch(): void {
    this.watch?.disarm();
    if (this.o.store.state.training.watch) {
      this.o.store.updateState((d) => {
        d.training.watch = null;
      });
    }
  }
}

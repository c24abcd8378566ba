import * as tf from "@tensorflow/tfjs-core";
import { readF32, writeF32s } from "../wasm/heap.js";
import { nativeGemm, nativeOptimizerOf, type NativeOptimizer } from "../native/gemm.js";
import type { AdamWState, MomentData } from "../../models/adapters/optimizerState.js";
import { variableFrom } from "../model/variable.js";

/**
 * AdamW (decoupled weight decay, as torch.optim.AdamW) with global gradient-norm clipping,
 * defaults from method.md: betas 0.9/0.98, weight decay 0.1, clip 1.0, lr 1e-4 (the
 * reference's LoRA runs).
 *
 * Weight decay applies to both LoRA matrices A and B. The adapter's effect is the product
 * B·A, and decaying either factor pulls that product toward 0, i.e. toward the frozen base:
 * the drift regulariser we want for a model that trains on a stream of personal feedback.
 * At lr·wd = 1e-5 per step it cannot erase A's random init in any practical run (B still
 * learns from a non-zero A), and a B that is not decayed could grow without that pull.
 */
export interface AdamWOptions {
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** Global L2 norm the gradients are scaled down to; 0 or Infinity turns clipping off. */
  maxGradNorm?: number;
}

export const ADAMW_DEFAULTS: Required<AdamWOptions> = {
  lr: 1e-4,
  beta1: 0.9,
  beta2: 0.98,
  eps: 1e-8,
  weightDecay: 0.1,
  maxGradNorm: 1.0,
};

export type { AdamWState, MomentData } from "../../models/adapters/optimizerState.js";

export interface StepInfo {
  /** Global gradient norm before clipping (a scalar the caller reads and disposes). */
  gradNorm: tf.Scalar;
}

/**
 * Scales every gradient by min(1, maxNorm / (‖g‖ + 1e-6)) where ‖g‖ is the norm over all of
 * them (torch.nn.utils.clip_grad_norm_), on the backend: nothing is read back, so a GPU step
 * never waits for the norm. Returns new tensors (the caller disposes them) and the norm.
 */
export function clipByGlobalNorm(grads: Record<string, tf.Tensor>, maxNorm: number): { grads: Record<string, tf.Tensor>; norm: tf.Scalar } {
  const names = Object.keys(grads);
  return tf.tidy(() => {
    const sq = names.map((n) => tf.sum(tf.square(grads[n])));
    const norm = tf.sqrt(sq.length ? tf.addN(sq) : tf.scalar(0)) as tf.Scalar;
    const clipOn = maxNorm > 0 && Number.isFinite(maxNorm);
    const scale = clipOn ? tf.minimum(tf.scalar(1), tf.div(tf.scalar(maxNorm), tf.add(norm, tf.scalar(1e-6)))) : tf.scalar(1);
    const out: Record<string, tf.Tensor> = {};
    for (const n of names) out[n] = tf.mul(grads[n], scale);
    return { grads: out, norm };
  });
}

export class AdamW {
  readonly options: Required<AdamWOptions>;
  private readonly params: Record<string, tf.Variable>;
  private readonly m: Record<string, tf.Variable> = {};
  private readonly v: Record<string, tf.Variable> = {};
  private stepCount = 0;

  constructor(params: Record<string, tf.Variable>, options: AdamWOptions = {}) {
    this.options = { ...ADAMW_DEFAULTS, ...options };
    this.params = params;
    for (const [name, p] of Object.entries(params)) {
      this.m[name] = variableFrom(tf.zerosLike(p), false, `adamw.m.${name}.${uniq()}`);
      this.v[name] = variableFrom(tf.zerosLike(p), false, `adamw.v.${name}.${uniq()}`);
    }
  }

  get step(): number {
    return this.stepCount;
  }

  /** Applies one update from `grads` (by parameter name; every parameter needs one). */
  applyGradients(grads: Record<string, tf.Tensor>, lr = this.options.lr): StepInfo {
    for (const name of Object.keys(this.params)) {
      if (!grads[name]) throw new Error(`AdamW: no gradient for parameter ${name}`);
    }
    if (fusedOnHost && hostMemoryBackend()) return this.applyOnHost(grads, lr);
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = this.options;
    const clip = clipByGlobalNorm(grads, maxGradNorm);
    this.stepCount++;
    const t = this.stepCount;
    // Bias corrections in double precision, then one float32 scalar each: deterministic.
    const bc1 = 1 - Math.pow(beta1, t);
    const bc2 = 1 - Math.pow(beta2, t);
    tf.tidy(() => {
      const b1 = tf.scalar(beta1);
      const b2 = tf.scalar(beta2);
      const ob1 = tf.scalar(1 - beta1);
      const ob2 = tf.scalar(1 - beta2);
      const decay = tf.scalar(1 - lr * weightDecay);
      const stepSize = tf.scalar(lr / bc1);
      const sqrtBc2 = tf.scalar(Math.sqrt(bc2));
      const epsT = tf.scalar(eps);
      for (const [name, p] of Object.entries(this.params)) {
        const g = clip.grads[name];
        const m = tf.add(tf.mul(b1, this.m[name]), tf.mul(ob1, g));
        const v = tf.add(tf.mul(b2, this.v[name]), tf.mul(ob2, tf.square(g)));
        this.m[name].assign(m);
        this.v[name].assign(v);
        // p ← p·(1 − lr·wd) − (lr/bc1)·m / (√v/√bc2 + eps), as torch.optim.AdamW
        const denom = tf.add(tf.div(tf.sqrt(v), sqrtBc2), epsT);
        p.assign(tf.sub(tf.mul(p, decay), tf.mul(stepSize, tf.div(m, denom))));
      }
    });
    tf.dispose(Object.values(clip.grads));
    return { gradNorm: clip.norm };
  }

  /**
   * The same update as one loop per parameter on the host, for backends whose tensors are host
   * memory (wasm, cpu: read and written in place, trainer/wasm/heap.ts): clipping, both moments and the
   * parameter in one pass, where the tensor path runs ~18 kernels per parameter (issue 31's
   * profile). Arithmetic in double precision, each stored value rounded to float32 as the
   * tensor path stores it. The loop runs in the native addon where it is built: the same
   * arithmetic, bit for bit, where V8's loop over the heap's shared memory was 7% of a step.
   */
  private applyOnHost(grads: Record<string, tf.Tensor>, lr: number): StepInfo {
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = this.options;
    const names = Object.keys(this.params);
    const native = nativeOptimizer();
    let sq = 0;
    for (const n of names) {
      const g = readF32(grads[n]);
      if (native) sq = native.sumSquares(g, sq);
      else for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
    }
    const norm = Math.sqrt(sq);
    const clipOn = maxGradNorm > 0 && Number.isFinite(maxGradNorm);
    // As clipByGlobalNorm: the scale is a float32, exactly 1 below the bound.
    const scale = clipOn ? Math.min(1, Math.fround(maxGradNorm / Math.fround(Math.fround(norm) + 1e-6))) : 1;
    this.stepCount++;
    const t = this.stepCount;
    const bc1 = 1 - Math.pow(beta1, t);
    const sqrtBc2 = Math.sqrt(1 - Math.pow(beta2, t));
    const decay = 1 - lr * weightDecay;
    const stepSize = lr / bc1;
    for (const name of names) {
      const p = this.params[name];
      tf.tidy(() => {
        const [m1, v1, p1] = writeF32s([p.shape, p.shape, p.shape], ([mn, vn, pn]) => {
          const g = readF32(grads[name]);
          const pv = readF32(p);
          const mv = readF32(this.m[name]);
          const vv = readF32(this.v[name]);
          if (native) {
            native.adamw(g, pv, mv, vv, pn, mn, vn, scale, beta1, beta2, decay, stepSize, sqrtBc2, eps);
            return;
          }
          for (let i = 0; i < g.length; i++) {
            const gi = Math.fround(g[i] * scale);
            mn[i] = beta1 * mv[i] + (1 - beta1) * gi;
            vn[i] = beta2 * vv[i] + (1 - beta2) * gi * gi;
            const m = mn[i];
            const v = vn[i];
            // p ← p·(1 − lr·wd) − (lr/bc1)·m / (√v/√bc2 + eps), as torch.optim.AdamW
            pn[i] = pv[i] * decay - (stepSize * m) / (Math.sqrt(v) / sqrtBc2 + eps);
          }
        });
        this.m[name].assign(m1);
        this.v[name].assign(v1);
        p.assign(p1);
      });
    }
    return { gradNorm: tf.scalar(norm) };
  }

  /** The moments and step, read back from the backend (asynchronously: GPU backends cannot read synchronously). */
  async getState(): Promise<AdamWState> {
    const dump = async (vars: Record<string, tf.Variable>): Promise<Record<string, MomentData>> => {
      const out: Record<string, MomentData> = {};
      for (const [n, x] of Object.entries(vars)) out[n] = { shape: [...x.shape], data: Float32Array.from((await x.data()) as Float32Array) };
      return out;
    };
    const step = this.stepCount;
    return { step, m: await dump(this.m), v: await dump(this.v) };
  }

  /** Restores a state from getState()/readOptimizerState(); refuses a mismatch clearly. */
  setState(state: AdamWState): void {
    for (const [kind, src, dst] of [
      ["m", state.m, this.m],
      ["v", state.v, this.v],
    ] as const) {
      const want = Object.keys(dst).sort();
      const have = Object.keys(src).sort();
      if (want.join("\n") !== have.join("\n")) {
        const missing = want.filter((n) => !(n in src));
        const extra = have.filter((n) => !(n in dst));
        throw new Error(
          `optimizer state does not match the adapter's parameters (${kind}: missing ${missing.slice(0, 3).join(", ") || "none"}; unexpected ${extra.slice(0, 3).join(", ") || "none"})`,
        );
      }
      for (const n of want) {
        const d = src[n];
        if (d.shape.join(",") !== dst[n].shape.join(",")) {
          throw new Error(`optimizer state for ${n} has shape [${d.shape.join(",")}], the parameter has [${dst[n].shape.join(",")}]`);
        }
      }
    }
    if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`optimizer state has an invalid step ${state.step}`);
    for (const n of Object.keys(this.m)) {
      tf.tidy(() => {
        this.m[n].assign(tf.tensor(state.m[n].data, state.m[n].shape));
        this.v[n].assign(tf.tensor(state.v[n].data, state.v[n].shape));
      });
    }
    this.stepCount = state.step;
  }

  dispose(): void {
    for (const x of [...Object.values(this.m), ...Object.values(this.v)]) x.dispose();
  }
}

/** The addon's sum of squares and update, where it is built with them and the switch is on. */
function nativeOptimizer(): NativeOptimizer | null {
  return nativeOnHost ? nativeOptimizerOf(nativeGemm()) : null;
}

let nativeOnHost = true;
/** The host loop in the native addon (default, where built) or in JavaScript: for --ab and the tests. */
export function setNativeAdamW(on: boolean): void {
  nativeOnHost = on;
}

/** Backends whose tensors live in host memory, read synchronously at the cost of a copy. */
function hostMemoryBackend(): boolean {
  const b = tf.getBackend();
  return b === "wasm" || b === "cpu";
}

let fusedOnHost = true;
/**
 * The host loop on wasm and cpu (default), or the tensor path there too (as before issue 31):
 * for bench/trainer-profile.ts's alternating comparison and the tests.
 */
export function setFusedAdamW(on: boolean): void {
  fusedOnHost = on;
}

let counter = 0;
/** Variable names are global in tfjs; two optimizers must not collide. */
function uniq(): number {
  return counter++;
}

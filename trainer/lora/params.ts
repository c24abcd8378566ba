/**
 * LoRA parameters: for each adapted linear layer W ([out, in]), trainable A ([in, rank]) and
 * B ([rank, out]) so that y = x·Wᵀ + scale·(x·A)·B with scale = alpha / rank (llama.cpp's
 * scale with user scale 1). B starts at zero, so a fresh adapter changes nothing.
 */
import * as tf from "@tensorflow/tfjs-core";
import type { BaseModel } from "../model/base-model.js";
import { LINEAR_NAMES, linearShape, type LinearName } from "../model/weights.js";
import { LORA_DEFAULTS } from "../../models/adapters/loraDefaults.js";
import { variableFrom } from "../model/variable.js";

export type LoraTarget = LinearName;
export const DEFAULT_TARGETS: readonly LoraTarget[] = LINEAR_NAMES;

export interface LoraPair {
  /** [in, rank]. */
  a: tf.Variable<tf.Rank.R2>;
  /** [rank, out]. */
  b: tf.Variable<tf.Rank.R2>;
}

export interface LoraParams {
  rank: number;
  alpha: number;
  /** alpha / rank. */
  scale: number;
  targets: LoraTarget[];
  /** Keyed by the base tensor name, e.g. "blk.0.attn_q.weight". */
  pairs: Map<string, LoraPair>;
}

export interface LoraOptions {
  rank?: number;
  alpha?: number;
  targets?: readonly string[];
  /** Seed for A's initialisation (deterministic per seed). */
  seed?: number;
}

export function loraKey(layer: number, target: LoraTarget): string {
  return `blk.${layer}.${target}.weight`;
}

function checkTargets(targets: readonly string[]): LoraTarget[] {
  const bad = targets.filter((t) => !(LINEAR_NAMES as readonly string[]).includes(t));
  if (bad.length > 0) throw new Error(`unknown LoRA target ${bad.join(", ")} (one of ${LINEAR_NAMES.join(", ")})`);
  if (targets.length === 0) throw new Error("LoRA needs at least one target");
  return [...new Set(targets)] as LoraTarget[];
}

/**
 * A fresh adapter: A ~ U(−1/√in, 1/√in) (PEFT's Kaiming-uniform bound), B = 0.
 */
export function createLora(model: BaseModel, opts: LoraOptions = {}): LoraParams {
  const rank = opts.rank ?? LORA_DEFAULTS.rank;
  const alpha = opts.alpha ?? LORA_DEFAULTS.alpha;
  if (!Number.isInteger(rank) || rank < 1) throw new Error(`LoRA rank must be a positive integer, got ${rank}`);
  if (!(alpha > 0)) throw new Error(`LoRA alpha must be positive, got ${alpha}`);
  const targets = checkTargets(opts.targets ?? DEFAULT_TARGETS);
  let seed = opts.seed ?? 0;
  const pairs = new Map<string, LoraPair>();
  for (let l = 0; l < model.config.nLayer; l++) {
    for (const t of targets) {
      const [nIn, nOut] = linearShape(model.config, t);
      const bound = 1 / Math.sqrt(nIn);
      const a = variableFrom(tf.randomUniform<tf.Rank.R2>([nIn, rank], -bound, bound, "float32", seed++), true);
      const b = variableFrom(tf.zeros<tf.Rank.R2>([rank, nOut]), true);
      pairs.set(loraKey(l, t), { a, b });
    }
  }
  return { rank, alpha, scale: alpha / rank, targets, pairs };
}

/** Every trainable variable, in a stable order (layer, then target; A before B). */
export function loraVariables(lora: LoraParams): tf.Variable[] {
  return [...lora.pairs.values()].flatMap((p) => [p.a, p.b]);
}

export function disposeLora(lora: LoraParams): void {
  for (const p of lora.pairs.values()) {
    p.a.dispose();
    p.b.dispose();
  }
  lora.pairs.clear();
}

/** A plain-data snapshot (for checkpoints and tests): values copied out of the variables. */
export interface LoraState {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  /** key → { a: [in*rank] row-major [in, rank], b: [rank*out] row-major [rank, out] }. */
  tensors: Record<string, { a: Float32Array; b: Float32Array }>;
}

export async function loraState(lora: LoraParams): Promise<LoraState> {
  const tensors: LoraState["tensors"] = {};
  // Async reads: GPU backends cannot read synchronously.
  for (const [k, p] of lora.pairs) tensors[k] = { a: (await p.a.data()) as Float32Array, b: (await p.b.data()) as Float32Array };
  return { rank: lora.rank, alpha: lora.alpha, targets: [...lora.targets], tensors };
}

/** Overwrites the variables' values from a snapshot with the same rank, targets and shapes. */
export function setLoraState(lora: LoraParams, state: LoraState): void {
  if (state.rank !== lora.rank) throw new Error(`LoRA state has rank ${state.rank}, the adapter has rank ${lora.rank}`);
  const keys = Object.keys(state.tensors);
  const missing = [...lora.pairs.keys()].filter((k) => !(k in state.tensors));
  const extra = keys.filter((k) => !lora.pairs.has(k));
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(
      `LoRA state does not match the adapter (missing ${missing.slice(0, 3).join(", ") || "none"}; unexpected ${extra.slice(0, 3).join(", ") || "none"})`,
    );
  }
  for (const [k, p] of lora.pairs) {
    const s = state.tensors[k];
    if (s.a.length !== p.a.size || s.b.length !== p.b.size) throw new Error(`LoRA state tensor ${k} has the wrong size`);
  }
  for (const [k, p] of lora.pairs) {
    const s = state.tensors[k];
    // tidy frees the temporaries; assign keeps its own reference to the data.
    tf.tidy(() => {
      p.a.assign(tf.tensor(s.a, p.a.shape, "float32"));
      p.b.assign(tf.tensor(s.b, p.b.shape, "float32"));
    });
  }
  lora.alpha = state.alpha;
  lora.scale = state.alpha / state.rank;
}

/**
 * What a warm trainer process does not compute twice (issue 31, "one pass where there are two").
 * A learning cycle is one `train` command (a few steps over the same batch) then one `evaluate`
 * (the publish gate's figures); both run forward passes whose results cannot have changed:
 *
 * - **Base log-probs** of a sequence's scored tokens (the KL anchor's reference; the OPD
 *   teacher's when the teacher is the base model): the base model never changes in a process.
 * - **Teacher log-probs under the current policy**: computed once per `train` run, the first
 *   time the run scores the sample (at the app's batch, every sample is in step 1), and reused by
 *   the run's later steps (OpenClaw-RL computes them once, when the hint arrives).
 * - **Final-normed scored rows** of a sequence (what the head reads, [n, nEmbd]): under the base
 *   model (never change), and under an adapter identified by its fingerprint (a hash of its A/B
 *   values and scale): a run's first step runs under the adapter it started from, which is the
 *   serving one when the trainer continued from it, and the gate's candidate is the next
 *   cycle's serving adapter when it is published. The gate takes those rows instead of running
 *   the body again.
 *
 * Keys are a hash of (first scored position, tokens), the sequence as the gate dedups it; a
 * training sample meets it when its tokens and promptLength are the turn's prompt + response
 * and prompt length (a live turn's sample is: rollout/samples.ts sends the served token ids).
 * Row tensors live on the backend, LRU-bounded in bytes (`maxRowBytes`, 64 MiB by default: the
 * memory plan should count them with the trainer's fixed device bytes); log-probs live in JS.
 */
import crypto from "node:crypto";
import * as tf from "@tensorflow/tfjs-core";
import type { LoraParams } from "../lora/params.js";
import { PASS_CACHE_ROW_BYTES } from "../../models/plan/memoryPlan.js";

/** The fingerprint of "no adapter": rows of the base model. */
export const BASE = "base";

/** Default bound of the row tensors the cache holds. */
export const ROW_CACHE_BYTES = PASS_CACHE_ROW_BYTES;
/** Bound of the log-probs it holds (host memory). */
const LP_CACHE_BYTES = 16 * 1024 * 1024;

/** The cache key of a sequence scored from `start`: the same sequence the gate's dedup sees. */
export function seqKey(tokens: readonly number[], start: number): string {
  return crypto
    .createHash("sha1")
    .update(`${start}:${tokens.join(",")}`)
    .digest("base64");
}

/**
 * A hash of everything an adapter's outputs depend on: its scale and each pair's A and B values
 * (read with `await data()`, so GPU backends work too). Equal fingerprints, equal outputs.
 */
export async function loraFingerprint(lora: LoraParams): Promise<string> {
  const h = crypto.createHash("sha256");
  h.update(`scale ${lora.scale};`);
  for (const key of [...lora.pairs.keys()].sort()) {
    const p = lora.pairs.get(key)!;
    const [a, b] = (await Promise.all([p.a.data(), p.b.data()])) as Float32Array[];
    h.update(`${key} ${p.a.shape.join("x")} ${p.b.shape.join("x")};`);
    h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    h.update(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  }
  return h.digest("base64");
}

/** An LRU map bounded in bytes; `drop` frees an evicted value. */
class Lru<V> {
  private readonly m = new Map<string, { v: V; bytes: number }>();
  bytes = 0;
  constructor(
    private readonly max: number,
    private readonly drop: (v: V) => void = () => undefined,
  ) {}
  has(k: string): boolean {
    return this.m.has(k);
  }
  get(k: string): V | undefined {
    const e = this.m.get(k);
    if (!e) return undefined;
    this.m.delete(k);
    this.m.set(k, e);
    return e.v;
  }
  set(k: string, v: V, bytes: number): void {
    this.delete(k);
    if (bytes > this.max) {
      this.drop(v);
      return;
    }
    this.m.set(k, { v, bytes });
    this.bytes += bytes;
    for (const [old, e] of this.m) {
      if (this.bytes <= this.max) break;
      this.m.delete(old);
      this.bytes -= e.bytes;
      this.drop(e.v);
    }
  }
  delete(k: string): void {
    const e = this.m.get(k);
    if (!e) return;
    this.m.delete(k);
    this.bytes -= e.bytes;
    this.drop(e.v);
  }
  deleteWhere(pred: (k: string) => boolean): void {
    for (const k of [...this.m.keys()]) if (pred(k)) this.delete(k);
  }
  get size(): number {
    return this.m.size;
  }
  clear(): void {
    this.deleteWhere(() => true);
  }
}

/** Log-probs by seqKey, bounded in bytes; a value is copied in (callers pass views of read-back buffers). */
class LpStore {
  private readonly lru = new Lru<Float32Array>(LP_CACHE_BYTES);
  get(key: string): Float32Array | undefined {
    return this.lru.get(key);
  }
  has(key: string): boolean {
    return this.lru.has(key);
  }
  set(key: string, lp: Float32Array): void {
    this.lru.set(key, Float32Array.from(lp), lp.byteLength);
  }
  clear(): void {
    this.lru.clear();
  }
}

/** Work a cache saved, in token-blocks (one token through one block), and rows it gave. */
export interface PassSavings {
  /** anchor reference passes (base model over the batch) not run */
  anchor: number;
  /** OPD teacher passes not run */
  teacher: number;
  /** the gate's body passes (serving adapter, base model) not run */
  gate: number;
  /** sequences whose rows the gate took from the cache (serving or base) */
  reusedRows: number;
}

export class PassCache {
  /** Base-model log-probs of a sequence's scored tokens, by seqKey. */
  readonly baseLp = new LpStore();
  /** Teacher log-probs under the policy of the current run (cleared when a run begins). */
  readonly runLp = new LpStore();
  /** Final-normed scored rows, by `${fingerprint}|${seqKey}` (fingerprint BASE: the base model). */
  private readonly rows: Lru<tf.Tensor2D>;
  /** Fingerprint of the adapter the current `train` run started from. */
  runStart: string | null = null;
  readonly saved: PassSavings = { anchor: 0, teacher: 0, gate: 0, reusedRows: 0 };

  constructor(readonly maxRowBytes = ROW_CACHE_BYTES) {
    this.rows = new Lru<tf.Tensor2D>(maxRowBytes, (t) => t.dispose());
  }

  /**
   * A `train` run begins with the adapter `lora`: its fingerprint is the run start's, the
   * run's teacher log-probs start empty, and adapter rows other than its own are dropped.
   */
  async beginRun(lora: LoraParams): Promise<void> {
    this.runStart = await loraFingerprint(lora);
    this.runLp.clear();
    this.keepAdapters([this.runStart]);
  }

  /** Drops the rows of every adapter but these (the base model's stay). */
  keepAdapters(fingerprints: ReadonlyArray<string | null>): void {
    const keep = new Set<string>([BASE, ...fingerprints.filter((f): f is string => f !== null)]);
    this.rows.deleteWhere((k) => !keep.has(k.slice(0, k.indexOf("|"))));
  }

  hasRows(fingerprint: string, key: string): boolean {
    return this.rows.has(`${fingerprint}|${key}`);
  }
  /** A clone of the cached rows (shares the data; the caller disposes it), so an eviction cannot free them under the caller. */
  takeRows(fingerprint: string, key: string): tf.Tensor2D | undefined {
    const t = this.rows.get(`${fingerprint}|${key}`);
    return t ? tf.clone(t) : undefined;
  }
  /**
   * Keeps each span's rows of `h` [n, D] (spans of `lengths` rows, in order) under its key;
   * a null key is skipped. `h` stays the caller's.
   */
  putRows(fingerprint: string, keys: ReadonlyArray<string | null>, lengths: readonly number[], h: tf.Tensor2D): void {
    const D = h.shape[1];
    let off = 0;
    keys.forEach((key, i) => {
      const n = lengths[i];
      if (key !== null && n > 0 && !this.rows.has(`${fingerprint}|${key}`)) {
        const t = tf.keep(tf.slice(h, [off, 0], [n, D]));
        this.rows.set(`${fingerprint}|${key}`, t, n * D * 4);
      }
      off += n;
    });
  }

  /** Tensors the cache holds (a leak check counts them out). */
  get tensorCount(): number {
    return this.rows.size;
  }
  get rowBytes(): number {
    return this.rows.bytes;
  }

  /** The adapter changed outside a run (a checkpoint loaded): what depends on it goes; the base model's stays. */
  dropAdapterState(): void {
    this.runStart = null;
    this.runLp.clear();
    this.keepAdapters([]);
  }

  dispose(): void {
    this.runStart = null;
    this.rows.clear();
    this.baseLp.clear();
    this.runLp.clear();
  }
}

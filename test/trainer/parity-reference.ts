/**
 * llama.cpp's log-probs (through node-llama-cpp, CPU) for parity tests: evaluates a token
 * sequence once and reads the full next-token logits at every position, then log-softmaxes them
 * in f64 (the raw logits avoid any truncation of the probabilities map). Also our side of the
 * comparison (the tfjs forward pass's log-probs) and the distance between the two.
 */
import * as tf from "@tensorflow/tfjs-core";
import { createLora, type LoraParams } from "../../trainer/lora/index.js";
import { AdamW } from "../../trainer/optim/adamw.js";
import { loraParamRecord, trainSteps } from "../../trainer/train/trainSteps.js";
import { tokenLogProbs, type BaseModel } from "../../trainer/model/index.js";
import { getLlama, type ControlledEvaluateInputItem, type Llama, type Token } from "node-llama-cpp";

let llama: Promise<Llama> | null = null;

function cpuLlama(): Promise<Llama> {
  llama ??= getLlama({ gpu: false, logLevel: "error" as never, build: "never" });
  return llama;
}

export interface ReferenceOptions {
  /** A LoRA adapter GGUF to apply (scale 1). */
  loraPath?: string;
  /** KV cache in F32 (default) or llama.cpp's default F16. */
  kvCache?: "F32" | "F16";
}

/** Token ids of `text` under the model's own tokenizer (with BOS when the model adds one). */
export async function llamaCppTokenize(modelPath: string, text: string): Promise<number[]> {
  const l = await cpuLlama();
  const model = await l.loadModel({ modelPath, gpuLayers: 0 });
  try {
    const ids = model.tokenize(text).map(Number);
    const bos = model.tokens.bos;
    return bos !== null && ids[0] !== Number(bos) ? [Number(bos), ...ids] : ids;
  } finally {
    await model.dispose();
  }
}

/** lp[t] = log p(tokens[t] | tokens[<t]) for t = 1..len−1 (lp[0] = NaN). */
export async function llamaCppLogProbs(modelPath: string, tokens: number[], opts: ReferenceOptions = {}): Promise<number[]> {
  const dists = await llamaCppDistributions(modelPath, tokens, opts);
  return [
    NaN,
    ...dists.map((d, i) => {
      const v = d.get(tokens[i + 1]);
      if (v === undefined) throw new Error(`logits at position ${i} lack token ${tokens[i + 1]}`);
      return v;
    }),
  ];
}

/** The full next-token log-distribution after each prefix tokens[0..i], i = 0..len−2 (f64 log-softmax of llama.cpp's logits). */
export async function llamaCppDistributions(modelPath: string, tokens: number[], opts: ReferenceOptions = {}): Promise<Array<Map<number, number>>> {
  const l = await cpuLlama();
  const model = await l.loadModel({ modelPath, gpuLayers: 0 });
  try {
    const ctx = await model.createContext({
      contextSize: Math.max(64, tokens.length + 8),
      batchSize: Math.max(64, tokens.length + 8),
      flashAttention: false,
      experimentalKvCacheKeyType: opts.kvCache ?? "F32",
      experimentalKvCacheValueType: opts.kvCache ?? "F32",
      ...(opts.loraPath ? { lora: { adapters: [{ filePath: opts.loraPath, scale: 1 }] } } : {}),
    });
    try {
      const seq = ctx.getSequence();
      const items: ControlledEvaluateInputItem[] = tokens.map((t, i) =>
        i < tokens.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token),
      );
      const out = await seq.controlledEvaluate(items);
      const dists: Array<Map<number, number>> = [];
      for (let i = 0; i < tokens.length - 1; i++) {
        const logits = out[i]?.next.logits;
        if (!logits) throw new Error(`no logits at position ${i}`);
        let max = -Infinity;
        for (const v of logits.values()) max = Math.max(max, v);
        let sum = 0;
        for (const v of logits.values()) sum += Math.exp(v - max);
        const lse = max + Math.log(sum);
        dists.push(new Map([...logits].map(([t, v]) => [Number(t), v - lse])));
      }
      return dists;
    } finally {
      await ctx.dispose();
    }
  } finally {
    await model.dispose();
  }
}

/** Our forward pass's log-probs for a batch: row b holds log p(tokens[b][t] | tokens[b][<t]). */
export async function ourBatchLogProbs(model: BaseModel, lora: LoraParams | null, tokens: number[][], targetStart: number[]): Promise<number[][]> {
  const r = tokenLogProbs(model, lora, { tokens, targetStart });
  const out = await r.logprobs.array();
  tf.dispose([r.logprobs, r.mask]);
  return out;
}

/** Our log-probs of one sequence, aligned with llamaCppLogProbs (position 0 is not scored). */
export async function ourLogProbs(model: BaseModel, lora: LoraParams | null, tokens: number[]): Promise<number[]> {
  return (await ourBatchLogProbs(model, lora, [tokens], [1]))[0];
}

/**
 * An adapter trained by the trainer itself: a few binary-RL steps (reward +1) on `tokens`,
 * with a learning rate large enough that llama.cpp's log-probs move visibly.
 */
export async function trainedLora(model: BaseModel, tokens: number[], opts: { seed?: number; steps?: number } = {}): Promise<LoraParams> {
  const lora = createLora(model, { rank: 4, alpha: 8, seed: opts.seed ?? 3 });
  const optimizer = new AdamW(loraParamRecord(lora), { lr: 2e-2 });
  try {
    const sample = { tokens, promptLength: 1, reward: 1, teachers: [], truncated: false };
    await trainSteps({ model, lora, optimizer }, [sample], { method: "binary", steps: opts.steps ?? 3, batchSize: 1 });
  } finally {
    optimizer.dispose();
  }
  return lora;
}

/** max |a[t] − b[t]| over the scored positions t ≥ 1. */
export function maxLogProbDiff(a: number[], b: number[]): number {
  let worst = 0;
  for (let t = 1; t < b.length; t++) worst = Math.max(worst, Math.abs(a[t] - b[t]));
  return worst;
}

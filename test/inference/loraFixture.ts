import { readGguf, metaString } from "../../models/gguf/reader.js";
import { writeGguf, f32Bytes } from "../../models/gguf/writer.js";
import { GgmlType, GgufValueType } from "../../models/gguf/types.js";

const TARGETS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"];

/**
 * Writes a LoRA adapter GGUF for `modelPath` (every attention and FFN projection, F32) with
 * deterministic non-zero A and B, so it visibly changes the model. Returns its size in bytes.
 */
export function writeLoraAdapter(file: string, modelPath: string, opts: { rank?: number; alpha?: number; seed?: number; magnitude?: number } = {}): number {
  const base = readGguf(modelPath);
  const arch = metaString(base, "general.architecture")!;
  const rank = opts.rank ?? 8;
  let s = (opts.seed ?? 1) >>> 0;
  const rnd = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296 - 0.5;
  };
  const mag = opts.magnitude ?? 0.5;
  const tensors: Array<{ name: string; dims: number[]; type: GgmlType; data: Uint8Array }> = [];
  let bytes = 0;
  for (const t of base.tensors) {
    const m = /^blk\.(\d+)\.(\w+)\.weight$/.exec(t.name);
    if (!m || !TARGETS.includes(m[2]) || t.dims.length !== 2) continue;
    const [inF, outF] = t.dims;
    const a = Float32Array.from({ length: inF * rank }, () => rnd() * mag);
    const b = Float32Array.from({ length: rank * outF }, () => rnd() * mag);
    tensors.push({ name: `${t.name}.lora_a`, dims: [inF, rank], type: GgmlType.F32, data: f32Bytes(a) });
    tensors.push({ name: `${t.name}.lora_b`, dims: [rank, outF], type: GgmlType.F32, data: f32Bytes(b) });
    bytes += (a.length + b.length) * 4;
  }
  writeGguf(file, {
    metadata: [
      ["general.architecture", { type: GgufValueType.STRING, value: arch }],
      ["general.type", { type: GgufValueType.STRING, value: "adapter" }],
      ["adapter.type", { type: GgufValueType.STRING, value: "lora" }],
      ["adapter.lora.alpha", { type: GgufValueType.FLOAT32, value: opts.alpha ?? rank }],
    ],
    tensors,
  });
  return bytes;
}

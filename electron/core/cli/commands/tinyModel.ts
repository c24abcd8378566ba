import fs from "node:fs";
import path from "node:path";
import { TINY_ARCHS, TINY_LIMITS, TINY_TYPES, TinyModelError, writeTinyModel } from "../../../../models/tiny/generate.js";
import { choiceOpt, CliError, intOpt, requiredString, UsageError, type CommandSpec } from "../command.js";

export const tinyModel: CommandSpec = {
  name: "tiny-model",
  usage: "--arch llama|qwen2|qwen3 --out FILE [--seed N] [--layers N] [--dim N] [--type f32|f16|q8_0|q4_k]",
  summary: "Write a deterministic tiny GGUF model for tests (same arguments, same bytes).",
  options: {
    arch: { type: "string", value: "ARCH", description: "llama, qwen2 (q/k/v biases) or qwen3 (q/k norms)" },
    out: { type: "string", value: "FILE", description: "where to write the .gguf (replaced atomically)" },
    seed: { type: "string", value: "N", description: "PRNG seed for the weights (default 1)" },
    layers: { type: "string", value: "N", description: `transformer blocks, ${TINY_LIMITS.layers.min}-${TINY_LIMITS.layers.max} (default 2)` },
    dim: { type: "string", value: "N", description: "embedding width (default 64; 256 for q4_k, which needs multiples of 256)" },
    type: { type: "string", value: "TYPE", description: "weight matrix type: f32 (default), f16, q8_0, q4_k" },
  },
  async run(args) {
    const arch = choiceOpt(args, "arch", TINY_ARCHS);
    if (!arch) throw new UsageError("--arch is required");
    const out = requiredString(args, "out");
    const type = choiceOpt(args, "type", TINY_TYPES);
    const seed = intOpt(args, "seed", TINY_LIMITS.seed.min, TINY_LIMITS.seed.max);
    const layers = intOpt(args, "layers", TINY_LIMITS.layers.min, TINY_LIMITS.layers.max);
    const dim = intOpt(args, "dim", TINY_LIMITS.dim.min, TINY_LIMITS.dim.max);
    const dir = path.dirname(path.resolve(out));
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new CliError(`--out: directory ${dir} does not exist`);
    if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new CliError(`--out: ${out} is a directory`);
    try {
      const d = writeTinyModel(out, { arch, type, seed, layers, dim });
      const size = fs.statSync(out).size;
      console.log(`wrote ${out}: ${d.arch} ${d.type}, ${d.layers} layers, dim ${d.dim}, ${d.heads} heads (${d.kvHeads} kv), ffn ${d.ffn}, vocab ${d.vocab}, context ${d.contextLength}, ${size} bytes`);
    } catch (err) {
      if (err instanceof TinyModelError) throw new UsageError(`--${err.message}`);
      throw err;
    }
  },
};

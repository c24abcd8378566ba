import fs from "node:fs";
import path from "node:path";
import {
  SHAPE_LIMITS,
  SHAPE_TYPES,
  summarizeFallbacks,
  TINY_ARCHS,
  TINY_LIMITS,
  TINY_TYPES,
  TinyModelError,
  writeShapeModel,
  writeTinyModel,
} from "../../../../models/tiny/generate.js";
import { findShape, SHAPE_IDS } from "../../../../models/tiny/shapes.js";
import type { GgufStreamProgress } from "../../../../models/gguf/writer.js";
import { choiceOpt, CliError, intOpt, requiredString, stringOpt, UsageError, type CommandSpec, type ParsedArgs } from "../command.js";

/** Models bigger than this report their progress on stderr. */
const PROGRESS_ABOVE_BYTES = 64 * 1024 * 1024;
const MB = 1024 * 1024;

export const tinyModel: CommandSpec = {
  name: "tiny-model",
  usage: "(--arch llama|qwen2|qwen3 | --shape ID) --out FILE [--seed N] [--layers N] [--dim N] [--type f32|f16|q8_0|q4_k] [--context N]",
  summary:
    "Write a deterministic tiny GGUF model for tests (same arguments, same bytes), or with --shape a random-weight model with a real model's exact shape.",
  options: {
    arch: { type: "string", value: "ARCH", description: "llama, qwen2 (q/k/v biases) or qwen3 (q/k norms)" },
    shape: { type: "string", value: "ID", description: `instead of --arch: the shape of a catalog model (${SHAPE_IDS.join(", ")})` },
    out: { type: "string", value: "FILE", description: "where to write the .gguf (replaced atomically)" },
    seed: { type: "string", value: "N", description: "PRNG seed for the weights (default 1)" },
    layers: {
      type: "string",
      value: "N",
      description: `transformer blocks, ${TINY_LIMITS.layers.min}-${TINY_LIMITS.layers.max} (default 2); with --shape 1 to the real count (default)`,
    },
    dim: { type: "string", value: "N", description: "embedding width (default 64; 256 for q4_k, which needs multiples of 256); not with --shape" },
    type: { type: "string", value: "TYPE", description: "weight matrix type: f32 (default), f16, q8_0, q4_k; with --shape f16, q8_0 (default) or q4_k" },
    context: { type: "string", value: "N", description: "declared context length (default 32768; with --shape the real model's)" },
  },
  async run(args) {
    const out = requiredString(args, "out");
    const dir = path.dirname(path.resolve(out));
    const checkOut = () => {
      if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new CliError(`--out: directory ${dir} does not exist`);
      if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new CliError(`--out: ${out} is a directory`);
    };
    try {
      if (stringOpt(args, "shape") !== undefined) {
        writeShape(args, out, checkOut);
        return;
      }
      const arch = choiceOpt(args, "arch", TINY_ARCHS);
      if (!arch) throw new UsageError("--arch is required (or --shape)");
      const type = choiceOpt(args, "type", TINY_TYPES);
      const seed = intOpt(args, "seed", TINY_LIMITS.seed.min, TINY_LIMITS.seed.max);
      const layers = intOpt(args, "layers", TINY_LIMITS.layers.min, TINY_LIMITS.layers.max);
      const dim = intOpt(args, "dim", TINY_LIMITS.dim.min, TINY_LIMITS.dim.max);
      const contextLength = intOpt(args, "context", SHAPE_LIMITS.context.min, SHAPE_LIMITS.context.max);
      checkOut();
      const d = writeTinyModel(out, { arch, type, seed, layers, dim, contextLength });
      const size = fs.statSync(out).size;
      console.log(
        `wrote ${out}: ${d.arch} ${d.type}, ${d.layers} layers, dim ${d.dim}, ${d.heads} heads (${d.kvHeads} kv), ffn ${d.ffn}, vocab ${d.vocab}, context ${d.contextLength}, ${size} bytes`,
      );
    } catch (err) {
      if (err instanceof TinyModelError) throw new UsageError(`--${err.message}`);
      throw err;
    }
  },
};

function writeShape(args: ParsedArgs, out: string, checkOut: () => void): void {
  const id = stringOpt(args, "shape")!;
  const shape = findShape(id);
  if (!shape) throw new UsageError(`--shape must be one of ${SHAPE_IDS.join(", ")}, got '${id}'`);
  if (stringOpt(args, "arch") !== undefined) throw new UsageError("--arch and --shape exclude each other (the shape has its architecture)");
  if (stringOpt(args, "dim") !== undefined) throw new UsageError("--dim cannot be used with --shape (the shape fixes the width)");
  const type = choiceOpt(args, "type", SHAPE_TYPES);
  const seed = intOpt(args, "seed", SHAPE_LIMITS.seed.min, SHAPE_LIMITS.seed.max);
  const layers = intOpt(args, "layers", 1, shape.layers);
  const contextLength = intOpt(args, "context", SHAPE_LIMITS.context.min, SHAPE_LIMITS.context.max);
  checkOut();

  const started = Date.now();
  let lastReport = 0;
  const tty = process.stderr.isTTY === true;
  const progress = (p: GgufStreamProgress) => {
    if (p.totalBytes < PROGRESS_ABOVE_BYTES) return;
    const now = Date.now();
    const last = p.tensor === p.tensors;
    if (!last && now - lastReport < (tty ? 200 : 5000)) return;
    lastReport = now;
    const line = `tensor ${p.tensor}/${p.tensors}, ${(p.bytesWritten / MB).toFixed(0)}/${(p.totalBytes / MB).toFixed(0)} MB, ${((now - started) / 1000).toFixed(1)} s`;
    process.stderr.write(tty ? `\r${line}${last ? "\n" : ""}` : `${line}\n`);
  };
  const m = writeShapeModel(out, { shape: shape.id, type, seed, layers, contextLength }, progress);
  const d = m.dims;
  const fallback =
    m.fallbacks.length === 0
      ? ""
      : `; q8_0 instead of q4_k for ${m.fallbacks.length} matrices whose rows are not a multiple of 256 (${summarizeFallbacks(m.fallbacks).join(", ")})`;
  console.log(
    `wrote ${out}: ${shape.id} shape, ${d.arch} ${d.type}, ${d.layers} layers, dim ${d.dim}, ${d.heads} heads (${d.kvHeads} kv) of ${d.headDim}, ` +
      `ffn ${d.ffn}, vocab ${d.vocab}, context ${d.contextLength}, ${shape.tiedOutput ? "tied output" : "separate output"}, ${m.bytes} bytes in ${((Date.now() - started) / 1000).toFixed(1)} s${fallback}`,
  );
}

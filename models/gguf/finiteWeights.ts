/**
 * An adapter whose weights hold NaN or ±Inf answers with nothing (every logit NaN): refused at
 * import, by the publish gate and before it is served (issue 26 F7). LoRA adapters are small
 * (megabytes), so reading every value is cheap; base models are not checked this way.
 */
import { readGguf, readTensorF32 } from "./reader.js";
import { canDequantize } from "./dequant.js";
import { GgufError } from "./types.js";

export class NonFiniteWeightsError extends GgufError {
  /** the API's model layer answers with it (a file the app refuses to serve) */
  readonly statusCode = 422;
  readonly code = "non_finite_weights";
  constructor(
    file: string,
    readonly tensor: string,
  ) {
    super(file, `tensor '${tensor}' holds NaN or infinite weights; the adapter is refused`);
    this.name = "NonFiniteWeightsError";
  }
}

/** The first tensor of a GGUF with a NaN or infinite value, or null when every value is finite. */
export function firstNonFiniteTensor(file: string): string | null {
  const g = readGguf(file);
  for (const t of g.tensors) {
    if (!canDequantize(t.type)) continue;
    const v = readTensorF32(g, t);
    for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i])) return t.name;
  }
  return null;
}

/** Throws NonFiniteWeightsError naming the first tensor with a NaN or infinite value. */
export function assertFiniteWeights(file: string): void {
  const bad = firstNonFiniteTensor(file);
  if (bad !== null) throw new NonFiniteWeightsError(file, bad);
}

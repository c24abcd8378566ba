/**
 * Hugging Face PEFT's LoRA layout for llama / qwen2 / qwen3 causal LMs, and the way between it
 * and llama.cpp's (trainer/lora/adapter-file.ts). Plain data, no tfjs.
 *
 * PEFT (`get_peft_model_state_dict`, saved as adapter_model.safetensors) names each half
 *   base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight
 *   base_model.model.model.layers.{i}.mlp.{gate,up,down}_proj.lora_{A,B}.weight
 * with lora_A [r, in] and lora_B [out, r] (torch row-major, as nn.Linear stores [out, in]);
 * its scale is lora_alpha / r (lora_alpha / √r with use_rslora).
 *
 * llama.cpp stores `blk.{i}.<name>.weight.lora_a` with ne = [in, r] (row-major [r, in]) and
 * `.lora_b` with ne = [r, out] (row-major [out, r]): the same bytes, so a half maps over as is,
 * except for one thing. For the `llama` architecture llama.cpp's HF converter permutes the rows
 * of q_proj and k_proj (convert_hf_to_gguf.py `LlamaModel.permute`: reshape(n_head, 2,
 * rows/n_head/2, in).swapaxes(1, 2)), so that its adjacent-pair ("normal") RoPE computes what
 * HF's rotate-half RoPE computes; convert_lora_to_gguf.py applies the same permutation to lora_B
 * (A is unchanged: the permutation acts on output rows). So for llama, B of q/k is permuted
 * going into GGUF and un-permuted coming out. qwen2 and qwen3 use the "neox" RoPE in llama.cpp,
 * HF's own layout: nothing is permuted.
 */
import type { LinearName } from "../arch/layout.js";

/** GGUF linear name → PEFT module path under `model.layers.{i}`. */
export const PEFT_MODULES: Record<LinearName, { group: "self_attn" | "mlp"; module: string }> = {
  attn_q: { group: "self_attn", module: "q_proj" },
  attn_k: { group: "self_attn", module: "k_proj" },
  attn_v: { group: "self_attn", module: "v_proj" },
  attn_output: { group: "self_attn", module: "o_proj" },
  ffn_gate: { group: "mlp", module: "gate_proj" },
  ffn_up: { group: "mlp", module: "up_proj" },
  ffn_down: { group: "mlp", module: "down_proj" },
};

const BY_MODULE = new Map(Object.entries(PEFT_MODULES).map(([target, m]) => [m.module, target as LinearName]));

/** The PEFT tensor name of one half (what `get_peft_model_state_dict` saves). */
export function peftTensorName(layer: number, target: LinearName, half: "A" | "B"): string {
  const m = PEFT_MODULES[target];
  return `base_model.model.model.layers.${layer}.${m.group}.${m.module}.lora_${half}.weight`;
}

/**
 * Parses a PEFT tensor name. Accepts the saved form and the in-memory one with the adapter's
 * name (`.lora_A.default.weight`), with or without the `base_model.model.` prefix. Returns null
 * for anything else (the caller says why it cannot use it).
 */
export function parsePeftTensorName(name: string): { layer: number; target: LinearName; half: "A" | "B" } | null {
  const m = /^(?:base_model\.model\.)?model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_(A|B)(?:\.[A-Za-z0-9_-]+)?\.weight$/.exec(name);
  if (!m) return null;
  const target = BY_MODULE.get(m[3]);
  if (!target || PEFT_MODULES[target].group !== m[2]) return null;
  return { layer: Number(m[1]), target, half: m[4] as "A" | "B" };
}

/** Whether llama.cpp's converter permutes this layer's rows for this architecture. */
export function isRopePermuted(arch: string, target: LinearName): boolean {
  return arch === "llama" && (target === "attn_q" || target === "attn_k");
}

/**
 * Rows of a row-major [rows, cols] matrix permuted as llama.cpp's converter does for `nHead`
 * heads: HF layout → GGUF layout. Row (h, j, i) with j ∈ {0, 1} the half and i < rows/nHead/2
 * moves to (h, i, j): GGUF row h·hd + 2i + j holds HF row h·hd + j·hd/2 + i.
 */
export function permuteRowsHfToGguf(m: Float32Array, rows: number, cols: number, nHead: number): Float32Array {
  return permuteRows(m, rows, cols, nHead, "toGguf");
}

/** The inverse of permuteRowsHfToGguf: GGUF layout → HF layout. */
export function permuteRowsGgufToHf(m: Float32Array, rows: number, cols: number, nHead: number): Float32Array {
  return permuteRows(m, rows, cols, nHead, "toHf");
}

function permuteRows(m: Float32Array, rows: number, cols: number, nHead: number, dir: "toGguf" | "toHf"): Float32Array {
  if (m.length !== rows * cols) throw new Error(`matrix has ${m.length} values, not ${rows} × ${cols}`);
  if (!(nHead > 0) || rows % (2 * nHead) !== 0) throw new Error(`${rows} rows cannot be split into ${nHead} heads of pairs`);
  const hd = rows / nHead;
  const half = hd / 2;
  const out = new Float32Array(m.length);
  for (let h = 0; h < nHead; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const g = h * hd + 2 * i + j;
        const f = h * hd + j * half + i;
        const [from, to] = dir === "toGguf" ? [f, g] : [g, f];
        out.set(m.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}

/** PEFT's adapter_config.json for a LoRA on a causal LM (the fields LoraConfig saves). */
export interface PeftLoraConfig {
  peft_type: "LORA";
  task_type: "CAUSAL_LM";
  base_model_name_or_path: string | null;
  r: number;
  lora_alpha: number;
  /** module names (e.g. ["q_proj", "v_proj"]), or a regex PEFT full-matches against module paths */
  target_modules: string[] | string;
  layers_to_transform: number[] | null;
  layers_pattern: string | null;
  lora_dropout: number;
  bias: "none";
  fan_in_fan_out: false;
  use_rslora: false;
  use_dora: false;
  modules_to_save: null;
  init_lora_weights: true;
  inference_mode: true;
  rank_pattern: Record<string, never>;
  alpha_pattern: Record<string, never>;
  revision: null;
}

/**
 * adapter_config.json for an adapter on `nLayer` layers with `pairs` = the (layer, target)
 * halves it has. A full product of layers × modules is written as a module list (with
 * layers_to_transform when not every layer is adapted); anything else as an exact regex.
 */
export function peftConfig(opts: {
  rank: number;
  alpha: number;
  nLayer: number;
  pairs: Array<{ layer: number; target: LinearName }>;
  baseModel: string | null;
}): PeftLoraConfig {
  const layers = [...new Set(opts.pairs.map((p) => p.layer))].sort((a, b) => a - b);
  const order = Object.keys(PEFT_MODULES) as LinearName[];
  const targets = order.filter((t) => opts.pairs.some((p) => p.target === t));
  const have = new Set(opts.pairs.map((p) => `${p.layer}:${p.target}`));
  const product = layers.every((l) => targets.every((t) => have.has(`${l}:${t}`)));
  let target_modules: string[] | string;
  let layers_to_transform: number[] | null = null;
  if (product) {
    target_modules = targets.map((t) => PEFT_MODULES[t].module);
    if (layers.length !== opts.nLayer) layers_to_transform = layers;
  } else {
    const paths = [...opts.pairs]
      .sort((a, b) => a.layer - b.layer || order.indexOf(a.target) - order.indexOf(b.target))
      .map((p) => `model\\.layers\\.${p.layer}\\.${PEFT_MODULES[p.target].group}\\.${PEFT_MODULES[p.target].module}`);
    target_modules = `^(${paths.join("|")})$`;
  }
  return {
    peft_type: "LORA",
    task_type: "CAUSAL_LM",
    base_model_name_or_path: opts.baseModel,
    r: opts.rank,
    lora_alpha: opts.alpha,
    target_modules,
    layers_to_transform,
    layers_pattern: null,
    lora_dropout: 0,
    bias: "none",
    fan_in_fan_out: false,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    init_lora_weights: true,
    inference_mode: true,
    rank_pattern: {},
    alpha_pattern: {},
    revision: null,
  };
}

/**
 * The scale-relevant facts of a foreign adapter_config.json, or the reason it cannot be taken
 * as a plain LoRA (DoRA, per-module ranks or alphas, extra trained modules, biases...).
 */
export function readPeftConfig(raw: unknown): { rank: number; alpha: number; rslora: boolean; baseModel: string | null } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new Error("adapter_config.json is not a JSON object");
  const c = raw as Record<string, unknown>;
  const peftType = c.peft_type;
  if (peftType !== undefined && peftType !== "LORA")
    throw new Error(`adapter_config.json says peft_type ${JSON.stringify(peftType)}; only LoRA adapters (LORA) can be imported`);
  const r = c.r;
  if (typeof r !== "number" || !Number.isInteger(r) || r < 1) throw new Error(`adapter_config.json has no valid rank r (${JSON.stringify(r)})`);
  const alpha = c.lora_alpha ?? 8; // PEFT's default
  if (typeof alpha !== "number" || !(alpha > 0)) throw new Error(`adapter_config.json has an invalid lora_alpha ${JSON.stringify(alpha)}`);
  if (c.use_dora === true) throw new Error("the adapter uses DoRA (use_dora), which llama.cpp cannot apply");
  if (c.fan_in_fan_out === true) throw new Error("the adapter has fan_in_fan_out: true (Conv1D layers), not the nn.Linear layout of llama/qwen models");
  const nonEmpty = (v: unknown) => typeof v === "object" && v !== null && Object.keys(v).length > 0;
  if (nonEmpty(c.rank_pattern))
    throw new Error(`the adapter sets per-module ranks (rank_pattern ${JSON.stringify(c.rank_pattern)}); only one rank for every module can be imported`);
  if (nonEmpty(c.alpha_pattern))
    throw new Error(`the adapter sets per-module alphas (alpha_pattern ${JSON.stringify(c.alpha_pattern)}); only one lora_alpha can be imported`);
  if (Array.isArray(c.modules_to_save) && c.modules_to_save.length > 0) {
    throw new Error(`the adapter also trains whole modules (modules_to_save: ${c.modules_to_save.join(", ")}), which a LoRA file cannot carry`);
  }
  if (c.bias !== undefined && c.bias !== "none")
    throw new Error(`the adapter trains biases (bias: ${JSON.stringify(c.bias)}), which a llama.cpp LoRA cannot carry`);
  if (c.lora_bias === true) throw new Error("the adapter has LoRA biases (lora_bias), which a llama.cpp LoRA cannot carry");
  const base = c.base_model_name_or_path;
  return { rank: r, alpha, rslora: c.use_rslora === true, baseModel: typeof base === "string" && base !== "" ? base : null };
}

/**
 * A Hugging Face repository id for the base model from a GGUF's metadata, when it names one:
 * a huggingface.co URL or an `owner/name` value under the keys llama.cpp's converters write.
 * GGUF repositories (…-GGUF) are not models PEFT can load, and are skipped.
 */
export function hfRepoFromMetadata(get: (key: string) => string | undefined): string | null {
  const keys = [
    "general.source.repo_url",
    "general.source.url",
    "general.source.huggingface.repository",
    "model.general.hf_hub_model_id",
    "general.repo_url",
    "general.url",
  ];
  for (const k of keys) {
    const v = get(k)?.trim();
    if (!v) continue;
    const m = /^(?:https?:\/\/(?:www\.)?(?:huggingface\.co|hf\.co)\/)?([A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*?)\/?$/.exec(v);
    if (!m) continue;
    const id = m[1];
    if (/-gguf$/i.test(id)) continue;
    // A bare value must look like owner/name, not a path ("models/x").
    if (!v.includes("huggingface.co") && !v.includes("hf.co") && (v.startsWith(".") || v.startsWith("/"))) continue;
    return id;
  }
  return null;
}

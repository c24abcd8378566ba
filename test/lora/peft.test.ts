/**
 * The PEFT side of adapter interchange (models/adapters/peft.ts, interchange.ts), without llama.cpp:
 * - the exported directory has PEFT's layout for llama / qwen2 / qwen3, written here from PEFT's
 *   documented state dict (names `base_model.model.model.layers.{i}.{self_attn,mlp}.{x}_proj.lora_{A,B}.weight`,
 *   lora_A [r, in_features], lora_B [out_features, r] with the HF config's widths) and LoraConfig;
 * - llama's Q/K rows: the permutation is llama.cpp's converter's (checked against its numpy
 *   expression when numpy is there), and RoPE in each layout gives the same attention scores;
 * - GGUF → PEFT → GGUF gives back the same bytes; rsLoRA's scale is kept;
 * - a mismatched or damaged adapter is refused with the reason.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { readGguf, readTensorBytes } from "../../models/gguf/reader.js";
import {
  AdapterMismatchError,
  readAdapterForBase,
  readBaseConfig,
  readGgufAdapter,
  readPeftAdapter,
  writeGgufAdapter,
  writePeftAdapter,
} from "../../models/adapters/interchange.js";
import { hfRepoFromMetadata, parsePeftTensorName, peftTensorName, permuteRowsGgufToHf, permuteRowsHfToGguf } from "../../models/adapters/peft.js";
import { readSafetensors, tensorF32, writeSafetensors } from "../../models/adapters/safetensors.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";
import { tinyModel, type TinyArch } from "../helpers/models.js";
import { writeLoraAdapter as writeRandomAdapter } from "../inference/loraFixture.js";

/** The HF config of a base GGUF, as transformers names it (what PEFT's shapes follow). */
function hfConfig(basePath: string) {
  const { config: c } = readBaseConfig(basePath);
  return {
    hidden_size: c.nEmbd,
    num_attention_heads: c.nHead,
    num_key_value_heads: c.nHeadKv,
    head_dim: c.headDim,
    intermediate_size: c.nFf,
    num_hidden_layers: c.nLayer,
  };
}

/** nn.Linear(in_features, out_features) of each projection in LlamaDecoderLayer / Qwen2DecoderLayer / Qwen3DecoderLayer. */
function hfLinear(h: ReturnType<typeof hfConfig>): Record<string, { group: string; in: number; out: number }> {
  return {
    q_proj: { group: "self_attn", in: h.hidden_size, out: h.num_attention_heads * h.head_dim },
    k_proj: { group: "self_attn", in: h.hidden_size, out: h.num_key_value_heads * h.head_dim },
    v_proj: { group: "self_attn", in: h.hidden_size, out: h.num_key_value_heads * h.head_dim },
    o_proj: { group: "self_attn", in: h.num_attention_heads * h.head_dim, out: h.hidden_size },
    gate_proj: { group: "mlp", in: h.hidden_size, out: h.intermediate_size },
    up_proj: { group: "mlp", in: h.hidden_size, out: h.intermediate_size },
    down_proj: { group: "mlp", in: h.intermediate_size, out: h.hidden_size },
  };
}

async function exportPeft(arch: TinyArch | "stories", rank = 4, alpha = 8) {
  const base = arch === "stories" ? storiesModelPath() : await tinyModel({ arch, layers: 2 });
  const dir = tempDir();
  const gguf = path.join(dir, "adapter.gguf");
  writeRandomAdapter(gguf, base, { rank, alpha, seed: 7 });
  const { config } = readBaseConfig(base);
  const adapter = readGgufAdapter(gguf, config);
  const out = path.join(dir, "peft");
  writePeftAdapter(out, adapter, config, "org/base-model");
  return { base, gguf, out, config, adapter, dir };
}

describe("PEFT layout", () => {
  for (const arch of ["llama", "qwen2", "qwen3"] as const) {
    test(`${arch}: adapter_model.safetensors has PEFT's names, F32 dtype and [r, in] / [out, r] shapes; adapter_config.json PEFT's LoraConfig`, async () => {
      const { base, out } = await exportPeft(arch, 4, 8);
      assert.deepEqual(fs.readdirSync(out).sort(), ["adapter_config.json", "adapter_model.safetensors"]);
      const h = hfConfig(base);
      const st = readSafetensors(path.join(out, "adapter_model.safetensors"));
      assert.deepEqual(st.metadata, { format: "pt" }, "transformers/PEFT save with metadata format=pt");
      const want = new Map<string, number[]>();
      for (let i = 0; i < h.num_hidden_layers; i++) {
        for (const [mod, l] of Object.entries(hfLinear(h))) {
          want.set(`base_model.model.model.layers.${i}.${l.group}.${mod}.lora_A.weight`, [4, l.in]);
          want.set(`base_model.model.model.layers.${i}.${l.group}.${mod}.lora_B.weight`, [l.out, 4]);
        }
      }
      const have = new Map(st.tensors.map((t) => [t.name, t.shape]));
      assert.deepEqual([...have.keys()].sort(), [...want.keys()].sort());
      for (const [n, s] of want) assert.deepEqual(have.get(n), s, n);
      for (const t of st.tensors) assert.equal(t.dtype, "F32", t.name);

      const cfg = JSON.parse(fs.readFileSync(path.join(out, "adapter_config.json"), "utf8"));
      assert.equal(cfg.peft_type, "LORA");
      assert.equal(cfg.task_type, "CAUSAL_LM");
      assert.equal(cfg.r, 4);
      assert.equal(cfg.lora_alpha, 8, "PEFT's scale lora_alpha / r = llama.cpp's alpha / rank");
      assert.deepEqual(cfg.target_modules, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]);
      assert.equal(cfg.base_model_name_or_path, "org/base-model");
      assert.equal(cfg.layers_to_transform, null);
      assert.equal(cfg.bias, "none");
      assert.equal(cfg.use_rslora, false);
      assert.equal(cfg.use_dora, false);
      assert.equal(cfg.fan_in_fan_out, false);
      assert.equal(cfg.modules_to_save, null);
    });
  }

  test("a partial adapter: layers_to_transform for a full product, an exact regex otherwise", async () => {
    const base = await tinyModel({ arch: "qwen2", layers: 2 });
    const { config } = readBaseConfig(base);
    const dir = tempDir();
    const full = path.join(dir, "full.gguf");
    writeRandomAdapter(full, base, { rank: 2 });
    const adapter = readGgufAdapter(full, config);
    const onlyLayer1 = { ...adapter, pairs: adapter.pairs.filter((p) => p.layer === 1 && (p.target === "attn_q" || p.target === "attn_v")) };
    const c1 = writePeftAdapter(path.join(dir, "p1"), onlyLayer1, config, null).config;
    assert.deepEqual(c1.target_modules, ["q_proj", "v_proj"]);
    assert.deepEqual(c1.layers_to_transform, [1]);
    assert.equal(c1.base_model_name_or_path, null);
    const ragged = { ...adapter, pairs: adapter.pairs.filter((p) => (p.layer === 0 && p.target === "attn_q") || (p.layer === 1 && p.target === "ffn_down")) };
    const c2 = writePeftAdapter(path.join(dir, "p2"), ragged, config, null).config;
    assert.equal(c2.target_modules, "^(model\\.layers\\.0\\.self_attn\\.q_proj|model\\.layers\\.1\\.mlp\\.down_proj)$");
    const re = new RegExp(c2.target_modules);
    assert.ok(re.test("model.layers.0.self_attn.q_proj") && re.test("model.layers.1.mlp.down_proj") && !re.test("model.layers.1.self_attn.q_proj"));
    // Read back: the same pairs.
    const back = readPeftAdapter(path.join(dir, "p2"), config);
    assert.deepEqual(
      back.pairs.map((p) => `${p.layer}:${p.target}`),
      ["0:attn_q", "1:ffn_down"],
    );
  });

  test("tensor names parse both ways; foreign names are not taken", () => {
    assert.equal(peftTensorName(3, "ffn_gate", "B"), "base_model.model.model.layers.3.mlp.gate_proj.lora_B.weight");
    assert.deepEqual(parsePeftTensorName("base_model.model.model.layers.3.mlp.gate_proj.lora_B.weight"), { layer: 3, target: "ffn_gate", half: "B" });
    assert.deepEqual(parsePeftTensorName("base_model.model.model.layers.0.self_attn.o_proj.lora_A.default.weight"), {
      layer: 0,
      target: "attn_output",
      half: "A",
    });
    assert.deepEqual(parsePeftTensorName("model.layers.2.self_attn.k_proj.lora_A.weight"), { layer: 2, target: "attn_k", half: "A" });
    for (const n of [
      "base_model.model.lm_head.lora_A.weight",
      "base_model.model.model.layers.0.mlp.q_proj.lora_A.weight",
      "base_model.model.model.embed_tokens.lora_embedding_A",
      "base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias",
    ]) {
      assert.equal(parsePeftTensorName(n), null, n);
    }
  });

  test("base_model_name_or_path comes from the GGUF's metadata where it names a Hugging Face model", () => {
    const from = (m: Record<string, string>) => hfRepoFromMetadata((k) => m[k]);
    assert.equal(from({ "general.source.repo_url": "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct" }), "Qwen/Qwen2.5-0.5B-Instruct");
    assert.equal(from({ "general.source.huggingface.repository": "meta-llama/Llama-3.2-1B-Instruct" }), "meta-llama/Llama-3.2-1B-Instruct");
    assert.equal(from({ "general.repo_url": "https://huggingface.co/bartowski/SmolLM2-135M-Instruct-GGUF" }), null, "a GGUF repository is no PEFT base");
    assert.equal(from({ "general.url": "https://example.com/x/y" }), null);
    assert.equal(from({ "general.name": "llama" }), null);
    assert.equal(from({}), null);
  });
});

describe("llama's RoPE permutation of Q/K", () => {
  test("is llama.cpp's converter's LlamaModel.permute (numpy), and its inverse", { skip: !hasNumpy() && "python3 with numpy not found" }, () => {
    // convert_hf_to_gguf.py: weights.reshape(n_head, 2, rows // n_head // 2, *rest).swapaxes(1, 2).reshape(weights.shape)
    const py = `
import json, sys
import numpy as np
def permute(weights, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape))
rows, cols, n_head, n_kv = [int(x) for x in sys.argv[1:5]]
w = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
print(json.dumps({"q": permute(w, n_head, n_head).ravel().tolist(), "k": permute(w[: rows // n_head * n_kv], n_head, n_kv).ravel().tolist()}))
`;
    const [rows, cols, nHead, nKv] = [64, 3, 4, 2];
    const r = spawnSync("python3", ["-c", py, String(rows), String(cols), String(nHead), String(nKv)], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const ref = JSON.parse(r.stdout) as { q: number[]; k: number[] };
    const w = Float32Array.from({ length: rows * cols }, (_, i) => i);
    assert.deepEqual([...permuteRowsHfToGguf(w, rows, cols, nHead)], ref.q);
    const kRows = (rows / nHead) * nKv;
    assert.deepEqual([...permuteRowsHfToGguf(w.slice(0, kRows * cols), kRows, cols, nKv)], ref.k);
    assert.deepEqual(permuteRowsGgufToHf(permuteRowsHfToGguf(w, rows, cols, nHead), rows, cols, nHead), w);
  });

  test("attention scores: HF's rotate-half RoPE on the un-permuted Q/K (with the exported LoRA) equal llama.cpp's adjacent-pair RoPE on the GGUF's", () => {
    const nHead = 4;
    const nKv = 2;
    const hd = 8;
    const nIn = 12;
    const rank = 3;
    const scale = 2;
    let s = 12345;
    const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5;
    const mat = (r: number, c: number) => Float32Array.from({ length: r * c }, rnd);
    // The GGUF side: base weights and LoRA as llama.cpp holds them.
    const wq = mat(nHead * hd, nIn);
    const wk = mat(nKv * hd, nIn);
    const aq = mat(rank, nIn);
    const bq = mat(nHead * hd, rank);
    const ak = mat(rank, nIn);
    const bk = mat(nKv * hd, rank);
    const eff = (w: Float32Array, b: Float32Array, a: Float32Array, rows: number) => {
      const out = Float32Array.from(w);
      for (let i = 0; i < rows; i++) for (let j = 0; j < nIn; j++) for (let r = 0; r < rank; r++) out[i * nIn + j] += scale * b[i * rank + r] * a[r * nIn + j];
      return out;
    };
    const mv = (w: Float32Array, x: Float32Array, rows: number) =>
      Float64Array.from({ length: rows }, (_, i) => x.reduce((acc, v, j) => acc + w[i * nIn + j] * v, 0));
    const theta = (i: number) => 10000 ** (-(2 * i) / hd);
    const ropeNormal = (v: Float64Array, pos: number) => {
      const o = Float64Array.from(v);
      for (let h = 0; h < v.length / hd; h++)
        for (let i = 0; i < hd / 2; i++) {
          const [x0, x1] = [v[h * hd + 2 * i], v[h * hd + 2 * i + 1]];
          const [c, sn] = [Math.cos(pos * theta(i)), Math.sin(pos * theta(i))];
          o[h * hd + 2 * i] = x0 * c - x1 * sn;
          o[h * hd + 2 * i + 1] = x0 * sn + x1 * c;
        }
      return o;
    };
    const ropeRotateHalf = (v: Float64Array, pos: number) => {
      const o = Float64Array.from(v);
      for (let h = 0; h < v.length / hd; h++)
        for (let i = 0; i < hd / 2; i++) {
          const [x1, x2] = [v[h * hd + i], v[h * hd + i + hd / 2]];
          const [c, sn] = [Math.cos(pos * theta(i)), Math.sin(pos * theta(i))];
          o[h * hd + i] = x1 * c - x2 * sn;
          o[h * hd + i + hd / 2] = x2 * c + x1 * sn;
        }
      return o;
    };
    const scores = (q: Float64Array, k: Float64Array) => {
      const out: number[] = [];
      for (let h = 0; h < nHead; h++) {
        const kh = Math.floor(h / (nHead / nKv));
        let d = 0;
        for (let i = 0; i < hd; i++) d += q[h * hd + i] * k[kh * hd + i];
        out.push(d);
      }
      return out;
    };
    const x = Float32Array.from({ length: nIn }, rnd);
    const y = Float32Array.from({ length: nIn }, rnd);
    const [pq, pk] = [5, 2];
    const gg = scores(ropeNormal(mv(eff(wq, bq, aq, nHead * hd), x, nHead * hd), pq), ropeNormal(mv(eff(wk, bk, ak, nKv * hd), y, nKv * hd), pk));
    // The HF side: base un-permuted as the converter's inverse, B un-permuted as the export does, A as is.
    const toHf = (m: Float32Array, rows: number, cols: number, heads: number) => permuteRowsGgufToHf(m, rows, cols, heads);
    const hfQ = eff(toHf(wq, nHead * hd, nIn, nHead), toHf(bq, nHead * hd, rank, nHead), aq, nHead * hd);
    const hfK = eff(toHf(wk, nKv * hd, nIn, nKv), toHf(bk, nKv * hd, rank, nKv), ak, nKv * hd);
    const hf = scores(ropeRotateHalf(mv(hfQ, x, nHead * hd), pq), ropeRotateHalf(mv(hfK, y, nKv * hd), pk));
    for (let h = 0; h < nHead; h++) assert.ok(Math.abs(gg[h] - hf[h]) < 1e-9, `head ${h}: ${gg[h]} vs ${hf[h]}`);
    // The other direction would not do: un-permuting with the forward map changes the scores.
    const wrong = (m: Float32Array, rows: number, cols: number, heads: number) => permuteRowsHfToGguf(m, rows, cols, heads);
    const badQ = eff(wrong(wq, nHead * hd, nIn, nHead), wrong(bq, nHead * hd, rank, nHead), aq, nHead * hd);
    const badK = eff(wrong(wk, nKv * hd, nIn, nKv), wrong(bk, nKv * hd, rank, nKv), ak, nKv * hd);
    const bad = scores(ropeRotateHalf(mv(badQ, x, nHead * hd), pq), ropeRotateHalf(mv(badK, y, nKv * hd), pk));
    assert.ok(
      bad.some((v, h) => Math.abs(v - gg[h]) > 1e-3),
      "the test tells the directions apart",
    );
  });

  test("the export un-permutes llama's q/k lora_B (and only those); qwen2/qwen3 keep GGUF's rows", async () => {
    for (const arch of ["llama", "qwen2"] as const) {
      const { out, gguf, config } = await exportPeft(arch, 4, 8);
      const g = readGguf(gguf);
      const st = readSafetensors(path.join(out, "adapter_model.safetensors"));
      const peft = (n: string) =>
        tensorF32(
          st,
          st.tensors.find((t) => t.name === n)!,
        );
      const ggB = (key: string) => new Float32Array(Uint8Array.from(readTensorBytes(g, `${key}.lora_b`)).buffer);
      const ggA = (key: string) => new Float32Array(Uint8Array.from(readTensorBytes(g, `${key}.lora_a`)).buffer);
      const qRows = config.nHead * config.headDim;
      const q = peft("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight");
      const expectQ = arch === "llama" ? permuteRowsGgufToHf(ggB("blk.1.attn_q.weight"), qRows, 4, config.nHead) : ggB("blk.1.attn_q.weight");
      assert.deepEqual(q, expectQ);
      if (arch === "llama") assert.notDeepEqual(q, ggB("blk.1.attn_q.weight"), "llama's rows moved");
      assert.deepEqual(peft("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"), ggB("blk.1.attn_v.weight"));
      assert.deepEqual(peft("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"), ggA("blk.1.attn_q.weight"));
    }
  });
});

describe("round trip and import", () => {
  for (const arch of ["llama", "qwen2", "qwen3", "stories"] as const) {
    test(`${arch}: GGUF → PEFT → GGUF gives the same tensor bytes and alpha`, async () => {
      const { base, gguf, out, dir } = await exportPeft(arch, 4, 6);
      const back = readAdapterForBase(out, base);
      assert.equal(back.source.format, "peft");
      assert.equal(back.rank, 4);
      assert.equal(back.alpha, 6);
      const file = path.join(dir, "back.gguf");
      writeGgufAdapter(file, back);
      const [x, y] = [readGguf(gguf), readGguf(file)];
      assert.equal(y.tensors.length, x.tensors.length);
      for (const t of x.tensors) assert.deepEqual(readTensorBytes(y, t.name), readTensorBytes(x, t.name), t.name);
      const alpha = (f: typeof x) => f.metadata.get("adapter.lora.alpha")?.value;
      assert.equal(alpha(y), alpha(x));
      assert.equal(y.metadata.get("general.architecture")?.value, x.metadata.get("general.architecture")?.value);
    });
  }

  test("rsLoRA: lora_alpha / √r becomes llama.cpp's alpha / rank; half-precision weights are read", async () => {
    const { base, out, config } = await exportPeft("qwen2", 4, 8);
    const cfgFile = path.join(out, "adapter_config.json");
    const cfg = JSON.parse(fs.readFileSync(cfgFile, "utf8"));
    fs.writeFileSync(cfgFile, JSON.stringify({ ...cfg, use_rslora: true }));
    const st = readSafetensors(path.join(out, "adapter_model.safetensors"));
    writeSafetensors(
      path.join(out, "adapter_model.safetensors"),
      st.tensors.map((t) => ({ name: t.name, shape: t.shape, values: tensorF32(st, t), dtype: "BF16" as const })),
    );
    const a = readAdapterForBase(out, base);
    assert.equal(a.alpha / a.rank, 8 / Math.sqrt(4));
    assert.deepEqual(a.source.dtypes, ["BF16"]);
    assert.equal(a.pairs.length, config.nLayer * 7);
  });

  test("mismatched or damaged adapters are refused with the reason", async () => {
    const { base, out, gguf, dir } = await exportPeft("qwen2", 4, 8);
    const llamaBase = await tinyModel({ arch: "llama", layers: 2 });
    const wideBase = await tinyModel({ arch: "qwen2", layers: 2, dim: 96 });
    const oneLayer = await tinyModel({ arch: "qwen2", layers: 1 });
    const refuse = (p: string, b: string, re: RegExp) =>
      assert.throws(
        () => readAdapterForBase(p, b),
        (e: unknown) => e instanceof AdapterMismatchError && re.test(e.message),
        String(re),
      );
    refuse(gguf, llamaBase, /the adapter is for architecture 'qwen2', the served model is 'llama'/);
    refuse(out, wideBase, /layer 0 q_proj \(attn_q\): lora_A is \[4, 64\] and lora_B \[64, 4\].*the served model's layer maps 96 → 96.*made for another model/);
    refuse(out, oneLayer, /adapts layer 1; the served model has 1 layers/);
    refuse(base, base, /not a LoRA adapter.*looks like a model/);
    refuse(path.join(dir, "nothing"), base, /no such file/);

    const variant = (
      name: string,
      edit: (files: { config: Record<string, unknown>; tensors: Array<{ name: string; shape: number[]; values: Float32Array }> }) => void,
    ) => {
      const d = path.join(dir, name);
      fs.mkdirSync(d);
      const st = readSafetensors(path.join(out, "adapter_model.safetensors"));
      const files = {
        config: JSON.parse(fs.readFileSync(path.join(out, "adapter_config.json"), "utf8")),
        tensors: st.tensors.map((t) => ({ name: t.name, shape: t.shape, values: tensorF32(st, t) })),
      };
      edit(files);
      fs.writeFileSync(path.join(d, "adapter_config.json"), JSON.stringify(files.config));
      writeSafetensors(path.join(d, "adapter_model.safetensors"), files.tensors);
      return d;
    };
    refuse(
      variant("dora", (f) => (f.config.use_dora = true)),
      base,
      /DoRA/,
    );
    refuse(
      variant("rankpattern", (f) => (f.config.rank_pattern = { q_proj: 8 })),
      base,
      /per-module ranks/,
    );
    refuse(
      variant("modules", (f) => (f.config.modules_to_save = ["lm_head"])),
      base,
      /modules_to_save: lm_head/,
    );
    refuse(
      variant("prefix", (f) => (f.config.peft_type = "PREFIX_TUNING")),
      base,
      /only LoRA adapters/,
    );
    refuse(
      variant("r", (f) => (f.config.r = 8)),
      base,
      /says r = 8, but the tensors have rank 4/,
    );
    refuse(
      variant("half", (f) => (f.tensors = f.tensors.filter((t) => t.name !== "base_model.model.model.layers.0.mlp.up_proj.lora_B.weight"))),
      base,
      /layer 0 up_proj \(ffn_up\): lora_B is missing/,
    );
    refuse(
      variant("nan", (f) => (f.tensors[3].values[2] = NaN)),
      base,
      /holds NaN at index 2: the adapter is damaged/,
    );
    refuse(
      variant("lmhead", (f) => f.tensors.push({ name: "base_model.model.lm_head.lora_A.weight", shape: [4, 64], values: new Float32Array(256) })),
      base,
      /output layer \(lm_head\)/,
    );
    refuse(
      variant("embed", (f) => f.tensors.push({ name: "base_model.model.model.embed_tokens.lora_embedding_A", shape: [4, 64], values: new Float32Array(256) })),
      base,
      /token embeddings/,
    );
    refuse(
      variant("mixed", (f) => {
        for (const t of f.tensors.filter((x) => x.name.includes("layers.1.mlp.down_proj"))) {
          t.shape = t.name.includes("lora_A") ? [2, t.shape[1]] : [t.shape[0], 2];
          t.values = t.values.slice(0, 2 * (t.name.includes("lora_A") ? t.shape[1] : t.shape[0]));
        }
      }),
      base,
      /layer 1 down_proj \(ffn_down\) has rank 2, other layers have rank 4/,
    );
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "adapter_model.bin"), "x");
    fs.writeFileSync(path.join(bin, "adapter_config.json"), "{}");
    refuse(bin, base, /adapter_model\.bin \(a pickled PyTorch file\)/);
    const noCfg = path.join(dir, "nocfg");
    fs.mkdirSync(noCfg);
    fs.copyFileSync(path.join(out, "adapter_model.safetensors"), path.join(noCfg, "adapter_model.safetensors"));
    refuse(noCfg, base, /no adapter_config.json/);
    const trunc = variant("trunc", () => undefined);
    const w = path.join(trunc, "adapter_model.safetensors");
    fs.truncateSync(w, fs.statSync(w).size - 10);
    refuse(trunc, base, /adapter_model.safetensors is damaged: truncated/);
    const badGguf = path.join(dir, "bad.gguf");
    fs.writeFileSync(badGguf, fs.readFileSync(gguf).subarray(0, 200));
    refuse(badGguf, base, /not a readable GGUF adapter/);
  });
});

function hasNumpy(): boolean {
  return spawnSync("python3", ["-c", "import numpy"], { encoding: "utf8" }).status === 0;
}

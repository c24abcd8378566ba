/** Model loading refuses what the forward pass cannot run, with a message naming the file. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { initBackend } from "../../trainer/backend.js";
import { GgufValueType } from "../../models/gguf/types.js";
import { loadBaseModel } from "../../trainer/model/index.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { ggufVariant } from "./model-variants.js";

test("unsupported architectures, adapters, missing tensors and bad metadata are refused clearly", async () => {
  await initBackend();
  const dir = tempDir();
  const src = await tinyModel({ arch: "llama" });
  const str = (value: string) => ({ type: GgufValueType.STRING as const, value });
  const cases: Array<[string, Parameters<typeof ggufVariant>[3], RegExp]> = [
    [
      "gemma.gguf",
      { metadata: { "general.architecture": str("gemma") } },
      /gemma\.gguf: architecture 'gemma' is not supported by the trainer \(supported: llama, qwen2, qwen3\)/,
    ],
    ["adapter.gguf", { metadata: { "general.type": str("adapter") } }, /adapter\.gguf: general.type is 'adapter', not a base model/],
    ["noq.gguf", { dropTensors: ["blk.1.attn_q.weight"] }, /noq\.gguf: missing tensor 'blk\.1\.attn_q\.weight'/],
    ["yarn.gguf", { metadata: { "llama.rope.scaling.type": str("yarn") } }, /rope scaling 'yarn' is not supported/],
    [
      "heads.gguf",
      { metadata: { "llama.attention.head_count_kv": { type: GgufValueType.UINT32, value: 3 } } },
      /head_count 4 is not a multiple of head_count_kv 3/,
    ],
  ];
  for (const [name, edit, re] of cases) await assert.rejects(loadBaseModel(ggufVariant(src, dir, name, edit)), re, name);
  await assert.rejects(loadBaseModel(`${dir}/absent.gguf`), /absent\.gguf: no such file/);
  const ok = await loadBaseModel(src);
  assert.equal(ok.config.arch, "llama");
  ok.dispose();
});

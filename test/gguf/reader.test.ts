import assert from "node:assert/strict";
import fs from "node:fs";
import { describe, it } from "node:test";
import { archNumber, findTensor, metaArch, metaArray, metaNumber, metaString, readGguf, readTensorBytes, readTensorF32 } from "../../models/gguf/reader.js";
import { GgmlType, GgufError } from "../../models/gguf/types.js";
import { storiesModelPath } from "../helpers/cli.js";

const stories = storiesModelPath();

describe("GGUF reader on stories260K", () => {
  const path = stories;

  it("reads the header, metadata and the model's known shape", () => {
    const f = readGguf(path);
    assert.equal(f.version, 3);
    assert.equal(f.alignment, 32);
    assert.equal(f.fileSize, fs.statSync(path).size);
    assert.equal(f.tensorDataOffset % 32, 0);
    assert.equal(metaArch(f), "llama");
    assert.equal(metaString(f, "tokenizer.ggml.model"), "llama");
    assert.equal(archNumber(f, "block_count"), 5);
    assert.equal(metaNumber(f, "llama.embedding_length"), 64);
    assert.equal(metaNumber(f, "llama.attention.head_count"), 8);
    assert.equal(metaNumber(f, "llama.attention.head_count_kv"), 4);
    assert.equal(metaNumber(f, "llama.feed_forward_length"), 172);
    assert.equal(metaNumber(f, "llama.context_length"), 2048);
    const tokens = metaArray(f, "tokenizer.ggml.tokens");
    assert.equal(tokens?.length, 512);
    assert.deepEqual(tokens?.slice(0, 3), ["<unk>", "<s>", "</s>"]);
    assert.equal(metaString(f, "no.such.key"), undefined);
    assert.equal(metaNumber(f, "general.architecture"), undefined, "a string is not a number");
  });

  it("lists 48 F32 tensors with 292,800 parameters, laid out without overlap", () => {
    const f = readGguf(path);
    assert.equal(f.tensors.length, 48);
    assert.ok(f.tensors.every((t) => t.type === GgmlType.F32));
    assert.equal(
      f.tensors.reduce((n, t) => n + t.nElements, 0),
      292_800,
    );
    assert.deepEqual(findTensor(f, "token_embd.weight")?.dims, [64, 512]);
    assert.deepEqual(findTensor(f, "blk.0.attn_k.weight")?.dims, [64, 32]);
    assert.deepEqual(findTensor(f, "blk.4.ffn_down.weight")?.dims, [172, 64]);
    const sorted = [...f.tensors].sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i].offset >= sorted[i - 1].offset + sorted[i - 1].byteLength);
    const last = sorted[sorted.length - 1];
    assert.ok(f.tensorDataOffset + last.offset + last.byteLength <= f.fileSize);
  });

  it("reads tensor data equal to the bytes at the recorded offset", () => {
    const f = readGguf(path);
    const whole = fs.readFileSync(path);
    for (const name of ["token_embd.weight", "output_norm.weight", "blk.4.ffn_down.weight"]) {
      const t = findTensor(f, name)!;
      const start = f.tensorDataOffset + t.offset;
      const expected = new Float32Array(t.nElements);
      for (let i = 0; i < t.nElements; i++) expected[i] = whole.readFloatLE(start + 4 * i);
      assert.deepEqual(readTensorBytes(f, name), new Uint8Array(whole.subarray(start, start + t.byteLength)));
      const got = readTensorF32(f, t);
      assert.equal(got.length, t.nElements);
      assert.deepEqual(got, expected);
    }
    // A trained RMSNorm weight is not all zeros or ones: the read is not a blank buffer.
    const norm = readTensorF32(f, "output_norm.weight");
    assert.ok(norm.some((v) => v !== 0 && v !== 1));
  });

  it("with loadData, serves tensor bytes as views of the loaded data section", () => {
    const lazy = readGguf(path);
    const loaded = readGguf(path, { loadData: true });
    assert.equal(lazy.data, undefined);
    assert.equal(loaded.data?.length, loaded.fileSize - loaded.tensorDataOffset);
    for (const t of loaded.tensors) {
      const view = readTensorBytes(loaded, t.name);
      assert.equal(view.buffer, loaded.data.buffer, `${t.name} is a view`);
      assert.deepEqual(view, readTensorBytes(lazy, t.name));
    }
    // readTensorF32 hands out its own copy: writing to it leaves the loaded data unchanged.
    const a = readTensorF32(loaded, "output_norm.weight");
    const before = a[0];
    a[0] = 12345;
    assert.equal(readTensorF32(loaded, "output_norm.weight")[0], before);
  });

  it("names a missing tensor", () => {
    const f = readGguf(path);
    assert.throws(
      () => readTensorF32(f, "nope.weight"),
      (e: unknown) => e instanceof GgufError && /no tensor named 'nope\.weight'/.test(e.message),
    );
  });
});

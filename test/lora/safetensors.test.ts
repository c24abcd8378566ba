/**
 * safetensors writer/reader (models/adapters/safetensors.ts): the byte layout of the format's spec
 * (u64 LE header length, JSON header with dtype / shape / data_offsets, data), round trips in
 * F32 / F16 / BF16, an independent reader in Python (struct + json + numpy, when numpy is
 * there), and a damaged file refused with the reason.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { decodeSafetensors, encodeSafetensors, readSafetensors, SafetensorsError, tensorF32, writeSafetensors } from "../../models/adapters/safetensors.js";
import { tempDir } from "../helpers/cli.js";

const a = Float32Array.from({ length: 6 }, (_, i) => i * 0.5 - 1.25);
const b = Float32Array.from({ length: 12 }, (_, i) => Math.sin(i + 1) * 3);

test("layout: u64 little-endian header length, a JSON header padded with spaces to 8 bytes, then the data in offset order", () => {
  const buf = encodeSafetensors(
    [
      { name: "z.weight", shape: [2, 3], values: a },
      { name: "b.weight", shape: [4, 3], values: b },
    ],
    { format: "pt" },
  );
  const n = Number(buf.readBigUInt64LE(0));
  assert.equal((8 + n) % 8, 0, "data starts 8-byte aligned");
  const text = buf.subarray(8, 8 + n).toString("utf8");
  assert.match(text, /^\{.*\} *$/);
  const header = JSON.parse(text);
  assert.deepEqual(header.__metadata__, { format: "pt" });
  // Sorted by name: b.weight first, then z.weight.
  assert.deepEqual(header["b.weight"], { dtype: "F32", shape: [4, 3], data_offsets: [0, 48] });
  assert.deepEqual(header["z.weight"], { dtype: "F32", shape: [2, 3], data_offsets: [48, 72] });
  assert.equal(buf.length, 8 + n + 72);
  assert.equal(buf.readFloatLE(8 + n + 48 + 4), a[1], "row-major little-endian f32");
});

test("round trip in F32 exactly, F16 and BF16 within their precision", () => {
  const dir = tempDir();
  const file = path.join(dir, "t.safetensors");
  writeSafetensors(file, [
    { name: "f32", shape: [4, 3], values: b },
    { name: "f16", shape: [4, 3], values: b, dtype: "F16" },
    { name: "bf16", shape: [4, 3], values: b, dtype: "BF16" },
    { name: "empty", shape: [0, 3], values: new Float32Array(0) },
  ]);
  const f = readSafetensors(file);
  const get = (n: string) =>
    tensorF32(
      f,
      f.tensors.find((t) => t.name === n)!,
    );
  assert.deepEqual(get("f32"), b);
  for (let i = 0; i < b.length; i++) {
    assert.ok(Math.abs(get("f16")[i] - b[i]) <= Math.abs(b[i]) * 2 ** -11 + 1e-7, `f16 ${i}`);
    assert.ok(Math.abs(get("bf16")[i] - b[i]) <= Math.abs(b[i]) * 2 ** -8, `bf16 ${i}`);
  }
  assert.equal(get("empty").length, 0);
  assert.deepEqual(f.tensors.find((t) => t.name === "bf16")!.shape, [4, 3]);
});

test("an independent reader (Python: struct, json, numpy) reads what we write", { skip: !hasNumpy() && "python3 with numpy not found" }, () => {
  const dir = tempDir();
  const file = path.join(dir, "t.safetensors");
  writeSafetensors(
    file,
    [
      { name: "x.lora_A.weight", shape: [2, 3], values: a },
      { name: "x.lora_B.weight", shape: [4, 3], values: b, dtype: "F16" },
    ],
    { format: "pt" },
  );
  const py = `
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
out = {}
for name, info in header.items():
    if name == "__metadata__":
        out[name] = info
        continue
    s, e = info["data_offsets"]
    dt = {"F32": "<f4", "F16": "<f2"}[info["dtype"]]
    arr = np.frombuffer(data[s:e], dtype=dt).reshape(info["shape"])
    out[name] = {"shape": list(arr.shape), "values": arr.astype(np.float64).ravel().tolist()}
print(json.dumps(out))
`;
  const r = spawnSync("python3", ["-c", py, file], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.__metadata__, { format: "pt" });
  assert.deepEqual(out["x.lora_A.weight"].shape, [2, 3]);
  assert.deepEqual(out["x.lora_A.weight"].values, [...a]);
  assert.deepEqual(out["x.lora_B.weight"].shape, [4, 3]);
  out["x.lora_B.weight"].values.forEach((v: number, i: number) => assert.ok(Math.abs(v - b[i]) < 2e-3));
});

test("a damaged file is refused with the reason", () => {
  const good = encodeSafetensors([
    { name: "w", shape: [2, 3], values: a },
    { name: "v", shape: [4, 3], values: b },
  ]);
  const n = Number(good.readBigUInt64LE(0));
  const withHeader = (h: unknown, dataBytes: number) => {
    let j = JSON.stringify(h);
    j += " ".repeat((8 - (j.length % 8)) % 8);
    const out = Buffer.alloc(8 + j.length + dataBytes);
    out.writeBigUInt64LE(BigInt(j.length), 0);
    out.write(j, 8);
    return out;
  };
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ["too short", good.subarray(0, 5), /only 5 bytes/],
    ["truncated data", good.subarray(0, good.length - 4), /truncated: the tensors need 72 bytes of data, the file has 68/],
    ["truncated header", good.subarray(0, 8 + n - 3), /truncated: the header needs/],
    ["trailing bytes", Buffer.concat([good, Buffer.alloc(4)]), /4 bytes after the last tensor/],
    [
      "huge header length",
      (() => {
        const x = Buffer.from(good);
        x.writeBigUInt64LE(1n << 40n, 0);
        return x;
      })(),
      /implausible/,
    ],
    [
      "header not JSON",
      (() => {
        const x = Buffer.from(good);
        x[9] = 0x7d;
        x[10] = 0x7d;
        return x;
      })(),
      /not valid JSON/,
    ],
    ["unknown dtype", withHeader({ w: { dtype: "Q4", shape: [2], data_offsets: [0, 2] } }, 2), /unknown dtype "Q4"/],
    ["size mismatch", withHeader({ w: { dtype: "F32", shape: [2, 3], data_offsets: [0, 20] } }, 20), /needs 24 bytes, its data_offsets give 20/],
    ["overlap", withHeader({ w: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, v: { dtype: "F32", shape: [2], data_offsets: [4, 12] } }, 12), /overlaps/],
    ["gap", withHeader({ w: { dtype: "F32", shape: [2], data_offsets: [4, 12] } }, 12), /gap in the data before tensor 'w'/],
    ["bad shape", withHeader({ w: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, 4), /invalid shape/],
    ["metadata not strings", withHeader({ __metadata__: { format: 1 } }, 0), /__metadata__.format is not a string/],
  ];
  for (const [what, bytes, re] of cases) {
    assert.throws(
      () => decodeSafetensors(bytes, "x.safetensors"),
      (e: unknown) => e instanceof SafetensorsError && re.test(e.message) && e.message.startsWith("x.safetensors: "),
      what,
    );
  }
  const dir = tempDir();
  assert.throws(() => readSafetensors(path.join(dir, "absent.safetensors")), /no such file/);
  fs.writeFileSync(path.join(dir, "i.safetensors"), withHeader({ w: { dtype: "I32", shape: [1], data_offsets: [0, 4] } }, 4));
  const f = readSafetensors(path.join(dir, "i.safetensors"));
  assert.throws(() => tensorF32(f, f.tensors[0]), /dtype I32; only float tensors/);
});

test("the writer refuses inconsistent input", () => {
  assert.throws(() => encodeSafetensors([{ name: "w", shape: [2, 2], values: a }]), /does not hold 6 values/);
  assert.throws(
    () =>
      encodeSafetensors([
        { name: "w", shape: [6], values: a },
        { name: "w", shape: [6], values: a },
      ]),
    /duplicate/,
  );
  assert.throws(() => encodeSafetensors([{ name: "__metadata__", shape: [6], values: a }]), /invalid tensor name/);
});

function hasNumpy(): boolean {
  return spawnSync("python3", ["-c", "import numpy"], { encoding: "utf8" }).status === 0;
}

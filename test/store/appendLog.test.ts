import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { AppendLog, describeRecovery } from "../../electron/core/store/appendLog.js";
import { tempDir } from "../helpers/cli.js";

function readAll(file: string, opts: { readOnly?: boolean } = {}) {
  const values: unknown[] = [];
  const locs: Array<{ offset: number; length: number }> = [];
  const { log, report } = AppendLog.open(file, {
    ...opts,
    onLine: (v, offset, length) => {
      values.push(v);
      locs.push({ offset, length });
    },
  });
  return { log, report, values, locs };
}

describe("append-only JSONL log", () => {
  it("appends lines and reads each back by its offset", () => {
    const file = path.join(tempDir(), "logs", "t.jsonl");
    const { log } = AppendLog.open(file);
    const locs = [{ a: 1 }, { b: "ü – multibyte" }, { c: [1, 2, 3] }].map((v) => log.append(v));
    assert.deepEqual(log.read(locs[1]), { b: "ü – multibyte" });
    log.close();
    const again = readAll(file);
    assert.deepEqual(again.values, [{ a: 1 }, { b: "ü – multibyte" }, { c: [1, 2, 3] }]);
    assert.deepEqual(again.locs, locs);
    assert.equal(again.report.tornTail, null);
    assert.equal(describeRecovery(again.report), null);
    again.log.close();
  });

  it("cuts a torn last line on open, keeps the rest, says so, and appends cleanly after it", () => {
    const file = path.join(tempDir(), "t.jsonl");
    const { log } = AppendLog.open(file);
    log.append({ n: 1 });
    log.append({ n: 2 });
    log.close();
    const goodSize = fs.statSync(file).size;
    const torn = '{"n":3,"text":"cut off in the mid'; // a crash mid-write
    fs.appendFileSync(file, torn);
    const r = readAll(file);
    assert.deepEqual(r.values, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(r.report.tornTail, { offset: goodSize, bytes: torn.length, truncated: true });
    assert.match(describeRecovery(r.report) ?? "", /kept 2 line\(s\); cut a torn last line \(33 bytes at offset \d+\)/);
    assert.equal(fs.statSync(file).size, goodSize);
    const loc = r.log.append({ n: 4 });
    assert.equal(loc.offset, goodSize);
    r.log.close();
    const again = readAll(file);
    assert.deepEqual(again.values, [{ n: 1 }, { n: 2 }, { n: 4 }]);
    assert.equal(again.report.tornTail, null);
    again.log.close();
  });

  it("treats a complete-looking last line without its newline as torn (the write did not finish)", () => {
    const file = path.join(tempDir(), "t.jsonl");
    fs.writeFileSync(file, '{"n":1}\n{"n":2}');
    const r = readAll(file);
    assert.deepEqual(r.values, [{ n: 1 }]);
    assert.equal(r.report.tornTail?.bytes, 7);
    r.log.close();
  });

  it("read-only opening ignores a torn tail without touching the file", () => {
    const file = path.join(tempDir(), "t.jsonl");
    fs.writeFileSync(file, '{"n":1}\n{"n":');
    const r = readAll(file, { readOnly: true });
    assert.deepEqual(r.values, [{ n: 1 }]);
    assert.equal(r.report.tornTail?.truncated, false);
    assert.equal(fs.readFileSync(file, "utf8"), '{"n":1}\n{"n":');
    assert.throws(() => r.log.append({ n: 2 }), /read-only/);
    r.log.close();
  });

  it("skips and reports an unreadable line in the middle, keeping the lines after it", () => {
    const file = path.join(tempDir(), "t.jsonl");
    fs.writeFileSync(file, '{"n":1}\n\u0000\u0000garbage\n{"n":3}\n');
    const r = readAll(file);
    assert.deepEqual(r.values, [{ n: 1 }, { n: 3 }]);
    assert.equal(r.report.corrupt.length, 1);
    assert.equal(r.report.corrupt[0].offset, 8);
    assert.equal(r.report.tornTail, null);
    r.log.close();
  });

  it("indexes lines longer than the scan chunk and lines that straddle chunk boundaries", () => {
    const file = path.join(tempDir(), "t.jsonl");
    const { log } = AppendLog.open(file, { durable: false });
    const big = "x".repeat(1_500_000); // > the 1 MiB read chunk
    const values = [{ s: "a" }, { s: big }, { s: "b".repeat(700_000) }, { s: "c" }];
    const locs = values.map((v) => log.append(v));
    log.close();
    const r = readAll(file);
    assert.equal(r.values.length, 4);
    assert.deepEqual(r.locs, locs);
    assert.deepEqual(r.log.read(r.locs[1]), { s: big });
    assert.deepEqual(r.log.read(r.locs[3]), { s: "c" });
    r.log.close();
  });

  it("opening a missing file read-only gives an empty log", () => {
    const r = readAll(path.join(tempDir(), "nope.jsonl"), { readOnly: true });
    assert.equal(r.values.length, 0);
    r.log.close();
  });
});

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { writeFileAtomicSync, writeFileAtomicWith } from "../../common/fs/atomicFile.js";
import { tempDir } from "../helpers/cli.js";

describe("atomic file writes", () => {
  it("replaces the content whole, with the mode asked for, and leaves no temp file", () => {
    const dir = tempDir("atomic");
    const file = path.join(dir, "a.json");
    fs.writeFileSync(file, "old");
    writeFileAtomicSync(file, "new content", 0o640);
    assert.equal(fs.readFileSync(file, "utf8"), "new content");
    if (process.platform !== "win32") assert.equal(fs.statSync(file).mode & 0o777, 0o640 & ~process.umask());
    assert.deepEqual(fs.readdirSync(dir), ["a.json"]);
  });

  it("keeps the old content and removes the temp file when the writer throws midway", () => {
    const dir = tempDir("atomic");
    const file = path.join(dir, "a.jsonl");
    fs.writeFileSync(file, "old\n");
    assert.throws(
      () =>
        writeFileAtomicWith(file, 0o600, (fd) => {
          fs.writeFileSync(fd, "half a line");
          throw new Error("disk on fire");
        }),
      /disk on fire/,
    );
    assert.equal(fs.readFileSync(file, "utf8"), "old\n");
    assert.deepEqual(fs.readdirSync(dir), ["a.jsonl"]);
  });

  it("returns what the writer returns and removes the temp file when the rename fails", () => {
    const dir = tempDir("atomic");
    assert.equal(
      writeFileAtomicWith(path.join(dir, "n"), 0o600, (fd) => fs.writeSync(fd, "12345")),
      5,
    );
    // A directory in the way makes the rename fail.
    const blocked = path.join(dir, "blocked");
    fs.mkdirSync(path.join(blocked, "child"), { recursive: true });
    assert.throws(() => writeFileAtomicSync(blocked, "x"));
    assert.deepEqual(fs.readdirSync(dir).sort(), ["blocked", "n"]);
  });
});

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { openState, StateFileError } from "../../electron/core/store/state.js";
import { Store } from "../../electron/core/store/store.js";
import { tempDir } from "../helpers/cli.js";

describe("state.json", () => {
  it("starts with defaults and fills settings a newer version added", () => {
    const dir = tempDir();
    const file = path.join(dir, "state.json");
    assert.equal(openState(file).data.settings.batchSize, 16);
    fs.writeFileSync(file, JSON.stringify({ version: 1, settings: { batchSize: 4 }, sessions: {} }));
    const db = openState(file);
    assert.deepEqual([db.data.settings.batchSize, db.data.settings.judgeVotes, db.data.settings.sessionIdleMinutes], [4, 3, 30]);
    assert.equal(db.data.training.state, "idle");
  });

  it("refuses a damaged file with a one-line error naming it", () => {
    const file = path.join(tempDir(), "state.json");
    fs.writeFileSync(file, '{"version":1,"settings":');
    assert.throws(
      () => openState(file),
      (e: unknown) => e instanceof StateFileError && e.message.startsWith(`${file} is not a usable state file (not valid JSON`) && !e.message.includes("\n"),
    );
    fs.writeFileSync(file, JSON.stringify({ settings: { batchSize: "many" } }));
    assert.throws(() => openState(file), /bad setting: 'batchSize'/);
  });

  it("refuses a file that parses but is not the app's state, with the same message, and leaves it as it was (issue 26 F8)", () => {
    const file = path.join(tempDir(), "state.json");
    const cases: [string, RegExp][] = [
      ["null", /does not hold a JSON object/],
      ["[1,2]", /does not hold a JSON object/],
      ["42", /does not hold a JSON object/],
      [JSON.stringify({ version: 1, sessions: [1, 2] }), /'sessions'/],
      [JSON.stringify({ version: 1, sessions: { a: 1 } }), /'sessions\.a'/],
      [JSON.stringify({ version: 1, sessions: { a: { id: "b" } } }), /'sessions\.a' holds session 'b'/],
      [JSON.stringify({ version: 1, checkpoints: {} }), /'checkpoints'/],
      [JSON.stringify({ version: 1, checkpoints: [{ id: "one", path: "x" }] }), /'checkpoints\.0\.id'/],
      [JSON.stringify({ version: 1, training: { activeCheckpoint: "3" } }), /'training\.activeCheckpoint'/],
      [JSON.stringify({ version: 2 }), /'version'/],
    ];
    for (const [text, detail] of cases) {
      fs.writeFileSync(file, text);
      assert.throws(
        () => Store.open(path.dirname(file)),
        (e: unknown) =>
          e instanceof StateFileError &&
          e.message.startsWith(`${file} is not a usable state file (`) &&
          detail.test(e.message) &&
          /move it aside/.test(e.message),
        text,
      );
      assert.equal(fs.readFileSync(file, "utf8"), text, "the file is left as it was");
    }
  });

  it("writes through a temp file (fsynced, renamed) and removes temps that dead writers left", () => {
    const dir = tempDir();
    const file = path.join(dir, "state.json");
    const dead = path.join(dir, ".state.json.2147483646.deadbeef.tmp"); // no such pid
    const live = path.join(dir, `.state.json.${process.ppid}.cafebabe.tmp`); // our parent: alive
    fs.writeFileSync(dead, "{half");
    fs.writeFileSync(live, "{half");
    const store = Store.open(dir);
    assert.ok(!fs.existsSync(dead));
    assert.ok(fs.existsSync(live));
    store.updateSettings({ autoLearn: false });
    assert.equal(JSON.parse(fs.readFileSync(file, "utf8")).settings.autoLearn, false);
    if (process.platform !== "win32") assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(
      fs.readdirSync(dir).filter((n) => n.endsWith(".tmp")),
      [path.basename(live)],
    );
    store.close();
  });

  it("read-only stores never write", () => {
    const dir = tempDir();
    Store.open(dir).close();
    const before = fs.readdirSync(dir).sort();
    const ro = Store.open(dir, { readOnly: true });
    assert.throws(() => ro.updateSettings({ batchSize: 2 }), /read-only/);
    ro.close();
    assert.deepEqual(fs.readdirSync(dir).sort(), before);
  });
});

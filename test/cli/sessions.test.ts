import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { runCli, tempDir } from "../helpers/cli.js";
import { OUT, preTreeDataDir, UI } from "../store/fixtures/preTree.js";

/** `clawrl sessions` over a data dir recorded by the version before the tree (test/store/fixtures/pre-tree). */
describe("clawrl sessions", () => {
  const dir = preTreeDataDir();

  it("list: one line per chat, newest first; --json is GET /api/sessions's reply", () => {
    const r = runCli(["sessions", "list", "--data-dir", dir]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines.length, 2);
    assert.ok(lines[0].startsWith(OUT) && lines[1].startsWith(UI), r.stdout);
    assert.match(lines[1], /5 turns.*Foxes$/);
    const j = runCli(["sessions", "list", "--json", "--data-dir", dir]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(
      (JSON.parse(j.stdout) as { sessions: Array<{ id: string }> }).sessions.map((s) => s.id),
      [OUT, UI],
    );
  });

  it("export --format md prints the branch shown; --format json --out writes the tree", () => {
    const md = runCli(["sessions", "export", UI, "--format", "md", "--data-dir", dir]);
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, /^# Foxes\n/);
    // No branch chosen: the latest turn's (the edited first question).
    assert.match(md.stdout, /What is a wolf\?/);
    assert.doesNotMatch(md.stdout, /What is a fox\?/);
    const out = path.join(tempDir(), "foxes.json");
    const js = runCli(["sessions", "export", UI, "--format", "json", "--out", out, "--data-dir", dir]);
    assert.equal(js.code, 0, js.stderr);
    const exp = JSON.parse(fs.readFileSync(out, "utf8")) as { format: string; turns: Array<{ parentTurnId: string | null }>; activePath: string[] };
    assert.equal(exp.format, "clawrl.session");
    assert.equal(exp.turns.length, 5);
    assert.deepEqual(
      exp.turns.map((t) => t.parentTurnId === null),
      [true, false, false, false, true],
    );
    assert.equal(exp.activePath.length, 1);
  });

  it("refuses an unknown session, a missing id, a bad format and a missing data dir in one line", () => {
    for (const [args, re] of [
      [["sessions", "export", "nope", "--data-dir", dir], /no session 'nope'/],
      [["sessions", "export", "--data-dir", dir], /needs a session id/],
      [["sessions", "export", UI, "--format", "pdf", "--data-dir", dir], /--format must be one of md, json/],
      [["sessions", "list", "--data-dir", path.join(dir, "missing")], /data dir not found/],
      [["sessions", "frob", "--data-dir", dir], /unknown action 'frob'/],
    ] as const) {
      const r = runCli([...args]);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.match(r.stderr, re);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    }
  });
});

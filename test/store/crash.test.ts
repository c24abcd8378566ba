import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { Store } from "../../electron/core/store/store.js";
import { repoRoot, tempDir } from "../helpers/cli.js";

/** Starts the write loop, waits until it has written 20 rounds, kills it with SIGKILL mid-loop. */
async function killMidWrite(dir: string): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "test/store/fixtures/writeLoop.ts"), dir], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`writer exited (${code}) before it was killed: ${err}`)));
  });
  child.removeAllListeners("exit");
  const exited = new Promise((r) => child.on("exit", r));
  child.kill("SIGKILL");
  await exited;
}

describe("a crash mid-write", () => {
  it("leaves a valid state.json and a log whose every kept line is whole, three kills in a row", async () => {
    const dir = tempDir();
    let lastRound = 0;
    for (let kill = 0; kill < 3; kill++) {
      await killMidWrite(dir);
      // state.json is one whole version: every checkpoint path names the same round.
      const raw = JSON.parse(fs.readFileSync(path.join(dir, "state.json"), "utf8"));
      const round = raw.training.samplesReady as number;
      assert.ok(round >= 20, `state holds round ${round}`);
      assert.equal(raw.checkpoints.length, 300);
      for (const c of raw.checkpoints) assert.equal(c.path.split("/")[2], String(round));

      const store = Store.open(dir);
      try {
        const turns = [...store.turnEntries()];
        assert.ok(turns.length >= 20 + lastRound, `kept ${turns.length} turns`);
        // A torn tail, if the kill hit a write, was cut; the file now ends on a newline.
        assert.equal(store.recovery.corrupt.length, 0);
        const bytes = fs.readFileSync(path.join(dir, "logs", "trajectories.jsonl"));
        assert.equal(bytes[bytes.length - 1], 0x0a);
        const last = store.readTurn(turns[turns.length - 1].turnId);
        assert.equal(last.text, `answer ${last.turnId}`);
        lastRound = turns.length;
        // Temp files of the killed writer are gone once a store opened the dir again.
        assert.deepEqual(
          fs.readdirSync(dir).filter((n) => n.endsWith(".tmp")),
          [],
        );
      } finally {
        store.close();
      }
    }
  });
});

// Cost of recording a turn (Rollout.beginTurn + completeTurn: one log append with fdatasync,
// next-state pairing, sessions index) against the floor: appending the same bytes to a file
// with one fdatasync, measured in the same run. Also: reopening a store (index rebuild).
// Run: node --import tsx bench/store-turns.ts
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EventBus } from "../electron/core/rollout/events.js";
import { Rollout } from "../electron/core/rollout/rollout.js";
import { Store } from "../electron/core/store/store.js";

const N = 100;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-store-"));
try {
  const store = Store.open(dir);
  const rollout = new Rollout({ store, bus: new EventBus() });
  // OpenClaw-shaped: a ~38k-character system prompt, 12k prompt tokens.
  const system = `You are a personal assistant.\n${"Tool use policy: be careful. ".repeat(1300)}`;
  const promptTokens = Array.from({ length: 12_000 }, (_, i) => i % 32_000);
  const history: Array<{ role: "system" | "user" | "assistant"; content: string }> = [{ role: "system", content: system }];
  const record = (i: number) => {
    history.push({ role: "user", content: `question ${i}` });
    const ctx = rollout.beginTurn({ headers: {}, bodyFields: {}, fromUi: false, messages: [...history] });
    const text = `answer ${i}`;
    rollout.completeTurn(ctx, {
      model: "bench",
      adapter: "base",
      promptTokens,
      responseTokens: [1, 2, 3, 4],
      tokenLogprobs: [-0.1, -0.2, -0.3, -0.4],
      text,
      finishReason: "stop",
      sampling: { temperature: 1, topP: 1 },
    });
    history.push({ role: "assistant", content: text });
    return ctx;
  };
  record(0); // warm-up
  let t = performance.now();
  for (let i = 1; i <= N; i++) record(i);
  const turnMs = (performance.now() - t) / N;
  const sessions = store.sessions();
  const last = [...store.turnEntries()].at(-1)!;
  const bytes = last.loc.length + 1;
  store.close();

  const raw = path.join(dir, "raw.jsonl");
  const fd = fs.openSync(raw, "a");
  const line = Buffer.alloc(bytes, 0x78);
  t = performance.now();
  for (let i = 0; i < N; i++) {
    fs.writeSync(fd, line);
    fs.fdatasyncSync(fd);
  }
  const rawMs = (performance.now() - t) / N;
  fs.closeSync(fd);

  t = performance.now();
  const again = Store.open(dir);
  const reopenMs = performance.now() - t;
  let turns = 0;
  for (const _ of again.turnEntries()) turns++;
  again.close();

  console.log(`sessions inferred: ${sessions.length} (want 1), turns: ${turns}, last turn line: ${(bytes / 1024).toFixed(0)} KiB`);
  console.log(`record a turn: ${turnMs.toFixed(2)} ms; append+fdatasync of the same bytes: ${rawMs.toFixed(2)} ms; ratio ${(turnMs / rawMs).toFixed(2)}`);
  console.log(
    `reopen (scan + index ${turns} turns, ${(fs.statSync(path.join(dir, "logs", "trajectories.jsonl")).size / 1e6).toFixed(1)} MB): ${reopenMs.toFixed(0)} ms`,
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

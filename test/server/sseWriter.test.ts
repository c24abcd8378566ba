import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { SseWriter } from "../../electron/core/server/sseWriter.js";

function sink() {
  const writes: string[] = [];
  return { writes, out: { destroyed: false, write: (s: string) => writes.push(s) } };
}

describe("SseWriter", () => {
  it("writes the first event at once and coalesces a burst into one later write, keeping every event", async () => {
    const { writes, out } = sink();
    const w = new SseWriter(out, 20);
    w.write("data: a\n\n");
    assert.deepEqual(writes, ["data: a\n\n"], "a quiet socket gets the event immediately");
    w.write("data: b\n\n");
    w.write("data: c\n\n");
    assert.equal(writes.length, 1, "events within the window wait");
    await sleep(40);
    assert.deepEqual(writes, ["data: a\n\n", "data: b\n\ndata: c\n\n"]);
  });

  it("flush() writes what is queued now and cancels the timer", async () => {
    const { writes, out } = sink();
    const w = new SseWriter(out, 50);
    w.write("x");
    w.write("y");
    w.flush();
    assert.deepEqual(writes, ["x", "y"]);
    await sleep(70);
    assert.deepEqual(writes, ["x", "y"], "no second write of the same bytes");
  });

  it("writes nothing to a destroyed socket", async () => {
    const { writes, out } = sink();
    const w = new SseWriter(out, 5);
    w.write("x");
    w.write("y");
    out.destroyed = true;
    await sleep(20);
    w.write("z");
    w.flush();
    assert.deepEqual(writes, ["x"]);
  });
});

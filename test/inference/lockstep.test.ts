import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { inLockstep, thenJob, type Job, type StepKind } from "../../electron/core/inference/lockstep.js";
import { tokenSeed } from "../../electron/core/inference/fluencyProbe.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the jobs did, in order: a step's start and end, a job's start and close. */
type Event = { at: "start" | "end"; item: number; step: number } | { at: "open" | "closed"; item: number; seq: number };

/** A job of `steps` steps whose step k takes `ms(item, k)` ms; its result is its item's name. */
function makeJob(log: Event[], seq: number, item: number, steps: number, ms: (item: number, k: number) => number, fail?: number): Job<string> {
  return (async function* (): Job<string> {
    log.push({ at: "open", item, seq });
    try {
      for (let k = 0; k < steps; k++) {
        yield k === 0 ? "chunk" : "token";
        log.push({ at: "start", item, step: k });
        await sleep(ms(item, k));
        if (k === fail) throw new Error(`item ${item} failed at step ${k}`);
        log.push({ at: "end", item, step: k });
      }
      return `item ${item}`;
    } finally {
      log.push({ at: "closed", item, seq });
    }
  })();
}

/** The steps' starts and ends split by round (the round wrapper marks where one begins). */
function byRound(log: Array<Event | "round">): Event[][] {
  const rounds: Event[][] = [];
  for (const e of log) {
    if (e === "round") rounds.push([]);
    else if (rounds.length > 0 && (e.at === "start" || e.at === "end")) rounds.at(-1)!.push(e);
  }
  return rounds;
}

describe("inLockstep (the probe's rounds)", () => {
  it("starts every active job's step together and the next round only when all have ended, results in item order", async () => {
    const log: Array<Event | "round"> = [];
    const kinds: boolean[] = [];
    // Steps of very different lengths: without the barrier the quick job would run ahead.
    const ms = (item: number, k: number) => (item === 0 ? 1 : 15 + 5 * ((item + k) % 3));
    const steps = [3, 5, 2, 4, 1];
    const seqs = ["a", "b"];
    const out = await inLockstep(
      [0, 1, 2, 3, 4],
      seqs,
      (seq, item) => makeJob(log as Event[], seqs.indexOf(seq), item, steps[item], ms),
      async (run, chunked) => {
        log.push("round");
        kinds.push(chunked);
        await run();
      },
    );
    assert.deepEqual(out, ["item 0", "item 1", "item 2", "item 3", "item 4"]);
    const rounds = byRound(log);
    for (const [r, events] of rounds.entries()) {
      const starts = events.filter((e) => e.at === "start");
      const firstEnd = events.findIndex((e) => e.at === "end");
      assert.ok(starts.length >= 1 && starts.length <= seqs.length, `round ${r}: ${starts.length} steps on ${seqs.length} sequences`);
      // All of a round's steps start before any of them ends: they are queued together.
      assert.ok(
        events.slice(0, starts.length).every((e) => e.at === "start"),
        `round ${r}: a step started after another ended (${firstEnd})`,
      );
      // And every step started in a round ends in it: the next round waits for the slowest.
      assert.equal(events.filter((e) => e.at === "end").length, starts.length, `round ${r}`);
    }
    // Every step of every item ran once, and a sequence freed by a finished job took the next item.
    assert.equal(
      rounds.flat().filter((e) => e.at === "start").length,
      steps.reduce((a, b) => a + b, 0),
    );
    const opened = (log as Event[]).filter((e) => e.at === "open");
    assert.deepEqual(
      opened.map((e) => e.item),
      [0, 1, 2, 3, 4],
    );
    // A round is "chunked" when one of its steps is a job's first (yielded "chunk" in makeJob).
    assert.equal(kinds[0], true);
    assert.ok(kinds.includes(false), "rounds of tokens alone are not chunked");
  });

  it("after a failure starts no new item, ends the round's other steps, closes the jobs left, and throws the first error", async () => {
    const log: Array<Event | "round"> = [];
    const ms = (item: number) => (item === 1 ? 30 : 5);
    await assert.rejects(
      inLockstep(
        [0, 1, 2, 3],
        [0, 1],
        (seq, item) => makeJob(log as Event[], seq, item, 4, ms, item === 0 ? 1 : undefined),
        async (run) => {
          log.push("round");
          await run();
        },
      ),
      /item 0 failed at step 1/,
    );
    const events = log.filter((e): e is Event => e !== "round");
    // Item 1's second step was in flight when item 0 failed: it ended before the error came out.
    assert.ok(events.some((e) => e.at === "end" && e.item === 1 && e.step === 1));
    assert.ok(!events.some((e) => e.at === "start" && e.item === 1 && e.step === 2), "no round after the failure");
    assert.ok(!events.some((e) => e.at === "open" && e.item >= 2), "no new item after the failure");
    // Both jobs were closed (their finally ran): the failed one and the one left suspended.
    assert.deepEqual(
      events
        .filter((e) => e.at === "closed")
        .map((e) => e.item)
        .sort(),
      [0, 1],
    );
  });

  it("an error thrown by the round wrapper (an abort while giving way) closes the suspended jobs", async () => {
    const log: Event[] = [];
    let rounds = 0;
    await assert.rejects(
      inLockstep(
        [0, 1],
        [0, 1],
        (seq, item) => makeJob(log, seq, item, 5, () => 1),
        async (run) => {
          if (++rounds === 3) throw new Error("aborted");
          await run();
        },
      ),
      /aborted/,
    );
    assert.equal(log.filter((e) => e.at === "start").length, 4, "two rounds of two steps");
    assert.equal(log.filter((e) => e.at === "closed").length, 2);
  });

  it("with an affinity, a free sequence takes the waiting item it suits best, the earliest of equals; results stay in item order", async () => {
    const log: Event[] = [];
    // Sequence "x" suits items 2 and 3, "y" suits item 1; item 0 suits neither.
    const suits: Record<string, number[]> = { x: [2, 3], y: [1] };
    const seqs = ["x", "y"];
    const out = await inLockstep(
      [0, 1, 2, 3],
      seqs,
      (seq, item) => makeJob(log, seqs.indexOf(seq), item, 1 + item, () => 1),
      (run) => run(),
      (seq, item) => (suits[seq].includes(item) ? 1 : 0),
    );
    assert.deepEqual(out, ["item 0", "item 1", "item 2", "item 3"]);
    const opened = log.flatMap((e) => (e.at === "open" ? [[seqs[e.seq], e.item]] : []));
    // x takes 2 (then 3 when 2 is done), y takes 1, then 0 (x is busy with 3 when y frees).
    assert.deepEqual(opened, [
      ["x", 2],
      ["y", 1],
      ["y", 0],
      ["x", 3],
    ]);
  });

  it("thenJob calls its hook once with the job's result, which it passes on", async () => {
    const seen: string[] = [];
    const kinds: StepKind[] = [];
    const out = await inLockstep(
      [7, 8],
      [0],
      (seq, item) =>
        thenJob(
          makeJob([], seq, item, 2, () => 0),
          (r) => seen.push(r),
        ),
      async (run, chunked) => {
        kinds.push(chunked ? "chunk" : "token");
        await run();
      },
    );
    assert.deepEqual(out, ["item 7", "item 8"]);
    assert.deepEqual(seen, ["item 7", "item 8"]);
    assert.deepEqual(kinds, ["chunk", "token", "chunk", "token"]);
  });
});

describe("tokenSeed", () => {
  it("gives each position of an answer its own seed, the same for the same seed and position, never llama.cpp's 'random'", () => {
    const seeds = new Set<number>();
    for (const seed of [0, 1, 1000, 2 ** 31, 0xffffffff]) for (let i = 0; i < 256; i++) seeds.add(tokenSeed(seed, i));
    assert.equal(seeds.size, 5 * 256, "no two (seed, position) pairs share a token seed here");
    assert.equal(tokenSeed(1000, 3), tokenSeed(1000, 3));
    for (const s of seeds) assert.ok(Number.isInteger(s) && s >= 0 && s < 0xffffffff, String(s));
  });
});

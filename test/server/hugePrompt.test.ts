// Issue 26 F4: a 30 MiB chat message held the event loop 13 s (synchronous tokenization) before
// a 400 context_length_exceeded. Now: the body limit is sized to the context (413 at once), a
// prompt that cannot fit is refused from its byte length before tokenizing, a long one is
// counted in chunks that yield, and /healthz answers in < 100 ms throughout.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { apiErrorOf } from "../../electron/core/server/errors.js";
import { bodyLimitFor, checkPromptLength } from "../../electron/core/inference/promptBound.js";
import { maxTokenBytes } from "../../models/gguf/loadable.js";
import { storiesModelPath, tempDir } from "../helpers/cli.js";

const MiB = 1 << 20;
/** A reply and how long it took (ms). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an API error or answer body; the assertions read its fields
type Reply = { status: number; body: any; ms: number };
const words = "Once upon a time there was a little girl named Lily who loved to play outside in the sun. ";
const text = (bytes: number) => words.repeat(Math.ceil(bytes / words.length)).slice(0, bytes);

/** Polls /healthz every 10 ms while `during` runs; the slowest answer (ms) and how many came. */
async function healthWhile<T>(url: string, during: () => Promise<T>): Promise<{ value: T; slowestMs: number; polls: number; ms: number; gapMs: number }> {
  let done = false;
  await (await fetch(`${url}/healthz`)).arrayBuffer(); // a connection made before the clock starts
  let slowestMs = 0;
  let polls = 0;
  const poller = (async () => {
    while (!done) {
      const t0 = performance.now();
      const r = await fetch(`${url}/healthz`);
      await r.arrayBuffer();
      assert.equal(r.status, 200);
      slowestMs = Math.max(slowestMs, performance.now() - t0);
      polls++;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const t0 = performance.now();
  try {
    const { value, gapMs } = await loopGapWhile(during);
    return { value, slowestMs, polls, ms: performance.now() - t0, gapMs };
  } finally {
    done = true;
    await poller;
  }
}

/**
 * healthWhile(url, send), tried up to 3 times until the reply takes < `maxMs` and /healthz stayed
 * < `healthMs`: this 2-core test machine is shared, and another process holding the CPU delays
 * both for reasons not under test. A server that blocks (tokenizing 900 KB whole takes ~1 s
 * here, 30 MiB ~13 s) fails every try. The best try is returned for the assertions.
 */
async function measured(url: string, send: () => Promise<Reply>, maxMs: number, healthMs: number) {
  let best: Awaited<ReturnType<typeof healthWhile<Reply>>> | null = null;
  for (let i = 0; i < 3; i++) {
    const r = await healthWhile(url, send);
    if (!best || Math.max(r.value.ms / maxMs, r.slowestMs / healthMs) < Math.max(best.value.ms / maxMs, best.slowestMs / healthMs)) best = r;
    if (r.value.ms < maxMs && r.slowestMs < healthMs) break;
  }
  return best!;
}

/** The slowest answer anywhere in the event loop (ms) while `during` runs: a 1 ms interval's longest gap. */
async function loopGapWhile<T>(during: () => Promise<T>): Promise<{ value: T; gapMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  const iv = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    last = now;
  }, 1);
  try {
    const value = await during();
    await new Promise((r) => setTimeout(r, 5)); // the interval sees a gap the work left behind
    return { value, gapMs };
  } finally {
    clearInterval(iv);
  }
}

async function post(core: RunningCore, route: string, body: string) {
  const r = await fetch(`${core.url}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json" },
    body,
  });
  const t = await r.text();
  return { status: r.status, body: t ? JSON.parse(t) : null };
}
const chatBody = (content: string) => JSON.stringify({ model: "x", messages: [{ role: "user", content }], max_tokens: 2 });

/**
 * POSTs a prompt of `bytes` bytes from a child process, so that building and sending it does
 * not hold this process's event loop (the server's, whose /healthz is measured).
 */
function postFromChild(core: RunningCore, route: "/v1/chat/completions" | "/v1/completions" | "/v1/embeddings", bytes: number): Promise<Reply> {
  const script = `
    const words = ${JSON.stringify(words)};
    const t = words.repeat(Math.ceil(${bytes} / words.length)).slice(0, ${bytes});
    const route = ${JSON.stringify(route)};
    const body = route === "/v1/completions" ? { model: "x", prompt: t, max_tokens: 2 } : route === "/v1/embeddings" ? { model: "x", input: ["short", t] } : { model: "x", messages: [{ role: "user", content: t }], max_tokens: 2 };
    const json = JSON.stringify(body);
    const t0 = performance.now();
    const r = await fetch(${JSON.stringify(core.url + route)}, { method: "POST", headers: { authorization: "Bearer ${core.token}", "content-type": "application/json" }, body: json });
    const reply = await r.text();
    process.stdout.write(JSON.stringify({ status: r.status, body: reply, ms: performance.now() - t0 }));`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", script], { maxBuffer: 1 << 20 }, (err, stdout) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its Omit<…> type hides that from the rule
      if (err) return reject(err);
      const r = JSON.parse(stdout) as { status: number; body: string; ms: number };
      resolve({ status: r.status, body: r.body ? JSON.parse(r.body) : null, ms: r.ms });
    });
  });
}

describe("huge prompts", { timeout: 180_000 }, () => {
  let core: RunningCore;
  let big: RunningCore;
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0, model: storiesModelPath(), training: false, engine: { threads: 1, sequences: 1 } });
    // The same model behind a 64 MiB body limit: the byte check alone must refuse the 30 MiB prompt.
    big = await startCore({
      dataDir: tempDir(),
      port: 0,
      model: storiesModelPath(),
      training: false,
      bodyLimit: 64 * MiB,
      engine: { threads: 1, sequences: 1 },
    });
  });
  after(async () => {
    await core?.close();
    await big?.close();
  });

  it("the body limit follows the context: 64 bytes a token, at least 1 MiB", () => {
    assert.equal(bodyLimitFor(2048), MiB);
    assert.equal(bodyLimitFor(32768), 2 * MiB);
    assert.equal(bodyLimitFor(131072), 8 * MiB);
    assert.equal(bodyLimitFor(undefined), 8 * MiB);
  });

  it("a 30 MiB prompt: 413 in under a second, /healthz < 100 ms meanwhile", async () => {
    const r = await measured(core.url, () => postFromChild(core, "/v1/chat/completions", 30 * MiB), 1000, 100);
    console.log(
      `30 MiB, default limit: ${r.value.status} in ${r.value.ms.toFixed(0)} ms; /healthz slowest ${r.slowestMs.toFixed(1)} ms over ${r.polls} polls, event-loop gap ${r.gapMs.toFixed(1)} ms`,
    );
    assert.equal(r.value.status, 413, JSON.stringify(r.value.body));
    assert.ok(r.value.ms < 1000, `${r.value.ms.toFixed(0)} ms`);
    assert.ok(r.slowestMs < 100, `/healthz took ${r.slowestMs.toFixed(0)} ms`);
  });

  it("a 30 MiB prompt under a 64 MiB body limit: 400 context_length_exceeded in under a second, from its byte length, without tokenizing", async () => {
    // Every tokenization of the served model is counted: the refusal must need none.
    const model = big.engine!.model;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be put back, and called through apply(model)
    const tokenize = model.tokenize;
    let tokenized = 0;
    model.tokenize = ((...args: Parameters<typeof tokenize>) => {
      tokenized++;
      return tokenize.apply(model, args);
    }) as typeof tokenize;
    let r: Awaited<ReturnType<typeof measured>>;
    try {
      r = await measured(big.url, () => postFromChild(big, "/v1/chat/completions", 30 * MiB), 1000, 1000);
    } finally {
      model.tokenize = tokenize;
    }
    assert.equal(tokenized, 0, "refused without tokenizing");
    console.log(
      `30 MiB, 64 MiB limit: ${r.value.status} in ${r.value.ms.toFixed(0)} ms; /healthz slowest ${r.slowestMs.toFixed(1)} ms over ${r.polls} polls, event-loop gap ${r.gapMs.toFixed(1)} ms`,
    );
    assert.equal(r.value.status, 400, JSON.stringify(r.value.body).slice(0, 300));
    assert.equal(r.value.body.error.code, "context_length_exceeded");
    assert.equal(r.value.body.error.param, "messages");
    assert.match(r.value.body.error.message, /context is 2048 tokens; the prompt has at least \d+ tokens/);
    assert.ok(r.value.ms < 1000, `${r.value.ms.toFixed(0)} ms`);
    // The body itself (30 MiB of JSON, which only a raised limit lets in) is parsed on the event
    // loop: 150–350 ms here, by the machine's load; the tokenizer no longer runs at all (it held
    // the loop 13 s before).
    assert.ok(r.slowestMs < 1000, `/healthz took ${r.slowestMs.toFixed(0)} ms`);
  });

  it("a prompt under the body limit that cannot fit: 400 before tokenizing, /healthz < 100 ms (chat and completions)", async () => {
    // 900 KB: the stories model (2048 tokens, longest vocabulary entry 9 bytes) holds at most 18 KB.
    assert.equal(maxTokenBytes(storiesModelPath()), 9);
    const r = await measured(core.url, () => postFromChild(core, "/v1/chat/completions", 900_000), 1000, 100);
    console.log(
      `900 KB chat: ${r.value.status} in ${r.value.ms.toFixed(0)} ms; /healthz slowest ${r.slowestMs.toFixed(1)} ms, event-loop gap ${r.gapMs.toFixed(1)} ms`,
    );
    assert.equal(r.value.status, 400);
    assert.equal(r.value.body.error.code, "context_length_exceeded");
    assert.ok(r.value.ms < 1000 && r.slowestMs < 100, `${r.value.ms.toFixed(0)} ms, /healthz ${r.slowestMs.toFixed(0)} ms`);
    const c = await measured(core.url, () => postFromChild(core, "/v1/completions", 900_000), 1000, 100);
    assert.equal(c.value.status, 400);
    assert.equal(c.value.body.error.code, "context_length_exceeded");
    assert.equal(c.value.body.error.param, "prompt");
    assert.ok(c.value.ms < 1000 && c.slowestMs < 100, `${c.value.ms.toFixed(0)} ms, /healthz ${c.slowestMs.toFixed(0)} ms`);
    // Each embedding input is checked alone, against the model's trained context.
    const e = await measured(core.url, () => postFromChild(core, "/v1/embeddings", 900_000), 1000, 100);
    assert.equal(e.value.status, 400, JSON.stringify(e.value.body));
    assert.equal(e.value.body.error.code, "context_length_exceeded");
    assert.equal(e.value.body.error.param, "input");
    assert.ok(e.value.ms < 1000 && e.slowestMs < 100, `${e.value.ms.toFixed(0)} ms, /healthz ${e.slowestMs.toFixed(0)} ms`);
  });

  it("a prompt that fits is still served, and one just past the byte bound is refused by it", async () => {
    const ok = await post(core, "/v1/chat/completions", chatBody("Once upon a time"));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const over = await post(core, "/v1/chat/completions", chatBody("x".repeat(2048 * 9)));
    assert.equal(over.status, 400);
    assert.match(over.body.error.message, /at least 2048 tokens/);
  });

  it("long prompts are counted in chunks: the event loop never waits more than a few ms, and a too-long one is refused", async () => {
    const model = core.engine!.model;
    // A context far larger than the text, and no byte bound (unknown file): every chunk is tokenized.
    const roomy = { info: () => ({ contextSize: 10_000_000, modelPath: "/nonexistent.gguf" }), model };
    const cjk = Array.from({ length: 64 * 1024 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 2000))).join("");
    for (const [name, t] of [
      ["1 MiB of English", text(MiB)],
      ["64k CJK characters without spaces", cjk],
    ] as const) {
      // Best of 3, as in measured(): another process holding the shared CPU also stops the loop.
      let r = { gapMs: Infinity };
      for (let i = 0; i < 3 && r.gapMs >= 50; i++) {
        const t0 = performance.now();
        const one = await loopGapWhile(() => checkPromptLength(roomy, [t], "messages"));
        console.log(`${name}: counted in ${(performance.now() - t0).toFixed(0)} ms, longest event-loop gap ${one.gapMs.toFixed(1)} ms`);
        if (one.gapMs < r.gapMs) r = one;
      }
      // Chunks aim at 4 ms; the margin is for a busy shared CPU (tokenized whole, the same text blocks ~1 s).
      assert.ok(r.gapMs < 50, `${name}: the event loop waited ${r.gapMs.toFixed(0)} ms`);
    }
    // Whole, the same 1 MiB blocks the loop for over a hundred ms: what the chunks avoid.
    const whole = await loopGapWhile(async () => model.tokenize(text(MiB), false).length);
    console.log(`1 MiB tokenized whole: event-loop gap ${whole.gapMs.toFixed(0)} ms`);
    assert.ok(whole.gapMs > 100);
    // Characters tokenized before the refusal, counted (not timed: the machine may be busy).
    let chars = 0;
    const counting = new Proxy(model, {
      get(target, key, receiver) {
        if (key !== "tokenize") return Reflect.get(target, key, receiver) as unknown;
        return (...args: Parameters<typeof model.tokenize>) => {
          chars += typeof args[0] === "string" ? args[0].length : 0;
          return target.tokenize(...args);
        };
      },
    });
    const tight = { info: () => ({ contextSize: 4096, modelPath: "/nonexistent.gguf" }), model: counting };
    await assert.rejects(
      checkPromptLength(tight, [text(MiB)], "messages"),
      (e: Error) => apiErrorOf(e).status === 400 && apiErrorOf(e).code === "context_length_exceeded",
    );
    assert.ok(chars > 0 && chars < MiB / 8, `refused after the first chunks, not after the whole text: ${chars} of ${MiB} characters tokenized`);
  });
});

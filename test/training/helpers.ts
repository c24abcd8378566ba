import { startCore, type CoreOptions, type RunningCore } from "../../electron/core/core.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

/**
 * The gate for tests that expect a random adapter to pass it and are not about its fluency
 * check (gate.test.ts, serveWatch.test.ts are): that check's 8 sampled answers on the tiny random
 * model, with seeds that follow the turn ids (new each run), measure a drop anywhere from -0.55
 * to +0.46 nats/token for one and the same adapter (0.05 random weights; -0.18 to +0.28 for 0.005,
 * the rounding of the LoRA's own products alone parting the answers). The 0.4 margin rejected 1 of
 * 22 such imports measured, enough to fail a full run now and then (it did three times). The KL bound
 * and the drift budget stay at their defaults.
 */
export const FLUENCY_NOT_TESTED = { fluencyMargin: 10 } as const;

/** A real core on the tiny qwen2 model with the learning loop on, small settings for a 2-core machine. */
export async function startLearningCore(
  training: Exclude<CoreOptions["training"], false | undefined> = {},
  dataDir = tempDir("clawrl-learn-"),
): Promise<RunningCore> {
  const model = await tinyModel({ arch: "qwen2" });
  const core = await startCore({
    model,
    dataDir,
    token: "learn-token",
    uiDir: "",
    engine: { maxContextSize: 512, sequences: 2, threads: 1, backend: "cpu" },
    // The default niceness (19) lets a busy shared test machine starve the trainer; the kill
    // test checks that the niceness given is applied.
    training: { stepsPerRun: 2, restartBackoffMs: 200, worker: { niceness: 5 }, ...training },
  });
  // No held-back slice: these tests count the samples their feedback makes (rollback.test.ts and
  // test/samples/atLeastOne.test.ts are about the slice). No preference block either: a hint would
  // put one in every later turn's prompt, each such turn a distillation sample (test/preferences/).
  await api(core, "PATCH", "/api/settings", {
    batchSize: 2,
    loraRank: 4,
    loraAlpha: 8,
    learningRate: 1e-3,
    maxTrainContext: 256,
    heldBackShare: 0,
    preferencesInPrompt: false,
  });
  return core;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test code reads many differently shaped JSON bodies; assertions check the fields
export async function api(core: RunningCore, method: string, route: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${core.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${core.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

let sessionCounter = 0;

/** One main turn through /v1/chat/completions; returns its turn id and the adapter that answered. */
export async function chat(core: RunningCore, content: string, seed = 1): Promise<{ turnId: string; adapter: string; text: string }> {
  const res = await fetch(`${core.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", "x-turn-type": "main", "x-session-id": `s-${++sessionCounter}` },
    body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content }], max_tokens: 12, seed, temperature: 1 }),
  });
  if (res.status !== 200) throw new Error(`chat answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
  return { turnId: res.headers.get("x-clawrl-turn-id")!, adapter: res.headers.get("x-clawrl-adapter")!, text: body.choices[0].message.content };
}

export async function feedback(core: RunningCore, turnId: string, thumbs: "up" | "down", hint?: string): Promise<void> {
  const r = await api(core, "POST", "/api/feedback", { turnId, thumbs, ...(hint ? { hint } : {}) });
  if (r.status !== 200) throw new Error(`feedback answered ${r.status}: ${JSON.stringify(r.json)}`);
}

/** Polls until `fn` returns a value (not undefined/false); fails after `timeoutMs` naming `what`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 240_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** A checkpoint is listed a moment before its run lets go (swap, status): waits for idle. */
export async function runEnded(core: RunningCore): Promise<void> {
  await waitFor("the run to end", async () => ((await api(core, "GET", "/api/status")).json.training.state === "idle" ? true : undefined));
}

export interface CkptView {
  n: number;
  version: string;
  verdict: string;
  createdAt: string;
  active: boolean;
  pinned: boolean;
  samples: number;
  kl: number | null;
  gate: { reasons: string[] };
}

export async function checkpoints(core: RunningCore): Promise<CkptView[]> {
  return (await api(core, "GET", "/api/checkpoints")).json.checkpoints as CkptView[];
}

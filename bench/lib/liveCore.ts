/**
 * A live core as the learning benches drive it: its API with the bearer token, streamed main
 * turns in sessions of their own (time to first content), and a batch of answers with thumbs.
 */
import type { RunningCore } from "../../electron/core/core.js";
import { ApiClient } from "../../electron/core/api/apiClient.js";
import type { ApiGetPath, ApiGetReply } from "../../electron/core/api/routes.js";

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
/** The 95th percentile (nearest rank): the bound on chat's time to first token during a cycle is on it. */
export const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(0.95 * xs.length) - 1)] ?? NaN;

export function liveCore(core: RunningCore, answerTokens: number) {
  const H = { authorization: `Bearer ${core.token}`, "content-type": "application/json" };
  const client = new ApiClient(core.url, core.token);
  /** POST, PATCH or DELETE; the reply typed by the caller from the contract (electron/core/api/). */
  const api = <T = unknown>(method: "POST" | "PATCH" | "DELETE", route: string, body?: unknown): Promise<T> => client.send<T>(method, route, body);
  /** GET a route of the contract, the reply typed from its path. */
  const get = <P extends ApiGetPath>(path: P): Promise<ApiGetReply<P>> => client.getJson(path);

  /** Resolves once chat has no request in flight or queued (at most 10 s). */
  async function engineIdle(): Promise<void> {
    const end = performance.now() + 10_000;
    for (;;) {
      const gate = core.engine?.gate;
      if (!gate || gate.inflight + gate.queued === 0 || performance.now() > end) return;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  let sid = 0;
  /**
   * One streamed main turn in a session of its own; ms to the first content and its turn id.
   * `firstTokenOnly`: stopped at its first content (the user pressed Stop), so a bench that
   * only times first tokens does not load the machine with whole answers.
   */
  async function ask(content: string, opts: { firstTokenOnly?: boolean } = {}): Promise<{ ms: number; turnId: string }> {
    const start = performance.now();
    const stop = new AbortController();
    const res = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...H, "x-turn-type": "main", "x-session-id": `cycle-${++sid}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content }], max_tokens: answerTokens, stream: true, seed: sid }),
      signal: stop.signal,
    });
    if (!res.ok) throw new Error(`chat: HTTP ${res.status} ${await res.text()}`);
    const turnId = res.headers.get("x-clawrl-turn-id")!;
    const dec = new TextDecoder();
    let buf = "";
    let ms: number | null = null;
    try {
      for await (const chunk of res.body!) {
        buf += dec.decode(chunk as Uint8Array, { stream: true });
        if (ms === null && /"content":"[^"]/.test(buf)) ms = performance.now() - start;
        if (ms !== null && opts.firstTokenOnly) {
          stop.abort();
          break;
        }
      }
    } catch (e) {
      if (!stop.signal.aborted) throw e;
    }
    // A stopped answer ends at the engine's next token: the next question must not find it still running.
    if (opts.firstTokenOnly) await engineIdle();
    return { ms: ms ?? performance.now() - start, turnId };
  }

  /**
   * Main turns with thumbs (two up, one down) until a batch is ready or a run starts: one main
   * turn in eight is held back (never trained on), so it takes a few more than the batch.
   * `thinkMs` after each rating: a person's pause before the next question.
   */
  async function feedBatch(batch: number, thinkMs = 0): Promise<{ asked: number; seconds: number }> {
    const t0 = performance.now();
    let asked = 0;
    for (; ; asked++) {
      const st = await get("/api/status");
      // A run under way took the samples; "starting" is the trainer started ahead of the batch (issue 31), not a run.
      const running = ["training", "evaluating", "publishing"].includes(st.training.state);
      if (running || (st.training.samplesWaiting ?? 0) >= batch) break;
      // Learning refused (the trainer's memory plan, a crash): no cycle will come; say why now, not after the batch.
      if (st.training.state === "error") throw new Error(`learning stopped while the batch filled: ${st.training.lastError}`);
      const { turnId } = await ask(`Tell me a short story about a ${["cat", "dog", "fox", "owl"][asked % 4]} number ${asked}.`);
      await api("POST", "/api/feedback", { turnId, thumbs: asked % 3 === 0 ? "down" : "up" });
      // A person reads the answer and writes the next question: the time the app may use ahead.
      if (thinkMs > 0) await new Promise((r) => setTimeout(r, thinkMs));
    }
    return { asked, seconds: (performance.now() - t0) / 1000 };
  }

  return { api, get, ask, feedBatch };
}

import http from "node:http";
import type { AddressInfo } from "node:net";
import { EventBus } from "../../electron/core/rollout/events.js";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import type { TurnRecord } from "../../electron/core/store/records.js";
import { Store } from "../../electron/core/store/store.js";
import { tempDir } from "../helpers/cli.js";

export interface JudgeRequest {
  kind: "prm" | "hint";
  body: { model: string; messages: ChatMessage[]; temperature: number; seed: number; max_tokens: number };
  auth: string | undefined;
}

/**
 * An OpenAI-compatible endpoint that answers judge prompts with scripted texts: `script(kind,
 * i)` gives the text of the i-th request of that kind (PRM or hint prompt, told apart by the
 * system prompt), or a number for an HTTP error status.
 */
export async function scriptedJudge(script: (kind: "prm" | "hint", i: number, req: JudgeRequest) => string | number) {
  const requests: JudgeRequest[] = [];
  const counts = { prm: 0, hint: 0 };
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw) as JudgeRequest["body"];
      const system = (body.messages[0]?.content as string | undefined) ?? "";
      const kind = /grade/.test(system) ? "prm" : "hint";
      const r: JudgeRequest = { kind, body, auth: req.headers.authorization };
      requests.push(r);
      const out = script(kind, counts[kind]++, r);
      if (req.url !== "/v1/chat/completions") {
        res.writeHead(404).end();
        return;
      }
      if (typeof out === "number") {
        res.writeHead(out, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "scripted failure" } }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "x",
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: out } }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A store in a temp dir with a bus (no model). */
export function tempStore() {
  const dir = tempDir("clawrl-judge-");
  return { dir, store: Store.open(dir, { durable: false }), bus: new EventBus() };
}

let n = 0;
/**
 * Appends a main turn (and, when `next` is given, a second turn whose request carries the
 * next state of the first). Returns the first turn's id.
 */
export function addTurn(
  store: Store,
  opts: { sessionId?: string; messages?: ChatMessage[]; text?: string; next?: ChatMessage[]; type?: "main" | "side"; promptTokens?: number[] } = {},
): string {
  const sessionId = opts.sessionId ?? `s${++n}`;
  const turnId = `t${++n}`;
  const time = new Date().toISOString();
  const messages = opts.messages ?? [{ role: "user", content: "How far is the moon?" }];
  const base: Omit<TurnRecord, "kind" | "v" | "turnId" | "index" | "messages" | "text"> = {
    sessionId,
    type: opts.type ?? "main",
    startedAt: time,
    time,
    fromUi: false,
    model: "tiny",
    adapter: "v3",
    promptTokens: opts.promptTokens ?? [1, 2, 3, 4],
    responseTokens: [7, 8, 9],
    tokenLogprobs: [-0.5, -1, -0.25],
    finishReason: "stop",
    sampling: { temperature: 1, topP: 1 },
    sessionDone: false,
    prefixKey: `k${n}`,
  };
  const text = opts.text ?? "About 384,400 miles.";
  store.appendTurn({ ...base, turnId, index: store.sessionTurns(sessionId).length, messages, text });
  if (opts.next) {
    const nextId = `t${++n}`;
    store.appendTurn(
      {
        ...base,
        turnId: nextId,
        index: store.sessionTurns(sessionId).length,
        messages: [...messages, { role: "assistant", content: text }, ...opts.next],
        text: "ok",
        prefixKey: `k${n}`,
      },
      { turnId, sessionId, messages: opts.next },
    );
  }
  return turnId;
}

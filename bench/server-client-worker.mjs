// The benchmark's HTTP client, run in a worker thread (as an outside client would run in its
// own process), so its SSE parsing does not share the server's JS thread. Plain JS: a worker
// does not inherit tsx's loader, and this file needs nothing from TypeScript.
import { parentPort, workerData } from "node:worker_threads";
import OpenAI from "openai";

const { baseURL, apiKey } = workerData;
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

parentPort.on("message", async (req) => {
  const t0 = performance.now();
  const stream = await client.chat.completions.create({ model: req.model, messages: req.messages, max_tokens: req.maxTokens, temperature: 0, stream: true, logprobs: true, stream_options: { include_usage: true } });
  let first = 0;
  let last = 0;
  let firstTokens = 0;
  let n = 0;
  let usage = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage.completion_tokens;
    const k = chunk.choices[0]?.logprobs?.content?.length ?? 0;
    if (k === 0) continue;
    last = performance.now();
    if (n === 0) {
      first = last;
      firstTokens = k;
    }
    n += k;
  }
  parentPort.postMessage({ ttftMs: first - t0, decodeTokS: (usage - firstTokens) / ((last - first) / 1000), tokens: usage });
});

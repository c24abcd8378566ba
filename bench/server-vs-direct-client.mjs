// The benchmark's HTTP client (the official openai package), run as a child process as an
// outside client is, so its SSE parsing costs the server process no CPU and no JS-thread time.
// Plain JS: the child does not need tsx. Protocol: the parent sends a request description, the
// child answers with the timings it saw from its side of the socket.
import OpenAI from "openai";

let client = null;

process.on("message", async (req) => {
  if (req.type === "init") {
    client = new OpenAI({ baseURL: req.baseURL, apiKey: req.apiKey, maxRetries: 0 });
    process.send({ ok: true });
    return;
  }
  if (req.type === "exit") process.exit(0);
  try {
    const t0 = performance.now();
    const stream = await client.chat.completions.create({
      model: req.model,
      messages: req.messages,
      max_tokens: req.maxTokens,
      temperature: req.temperature,
      top_p: req.topP,
      seed: req.seed,
      stream: true,
      logprobs: true,
      stream_options: { include_usage: true },
    });
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
    process.send({ ttftMs: first - t0, decodeMs: last - first, decodeTokens: usage - firstTokens, tokens: usage });
  } catch (err) {
    process.send({ error: String(err?.message ?? err) });
  }
});

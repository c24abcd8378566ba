/**
 * The eval's view of a running core, over its HTTP API only (the same whether the core runs
 * in this process or at --url): generation, feedback, settings, status, checkpoints.
 */
export interface Answer {
  text: string;
  adapter: string;
  turnId: string;
  sessionId: string;
}

export interface GenerateOptions {
  seed: number;
  maxTokens: number;
  temperature: number;
  /** main turns train; held-out answers are side turns (never reacted to, never trained) */
  turnType: "main" | "side";
  sessionId: string;
  sessionDone?: boolean;
}

export class CoreClient {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  private async call(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown; headers: Headers }> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${route}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (e) {
      throw new Error(`${method} ${this.url}${route}: cannot connect: ${(e as Error).message}`);
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = text;
    }
    return { status: res.status, json, headers: res.headers };
  }

  private async ok(method: string, route: string, body?: unknown, headers?: Record<string, string>) {
    const r = await this.call(method, route, body, headers);
    if (r.status < 200 || r.status >= 300) {
      const msg = (r.json as { error?: { message?: string } } | null)?.error?.message ?? JSON.stringify(r.json);
      throw new Error(`${method} ${route} answered ${r.status}: ${msg}`);
    }
    return r;
  }

  private turnHeaders(o: GenerateOptions): Record<string, string> {
    return { "x-session-id": o.sessionId, "x-turn-type": o.turnType, ...(o.sessionDone ? { "x-session-done": "1" } : {}) };
  }

  private answerOf(r: { headers: Headers }, text: string): Answer {
    return { text, adapter: r.headers.get("x-clawrl-adapter") ?? "unknown", turnId: r.headers.get("x-clawrl-turn-id") ?? "", sessionId: r.headers.get("x-clawrl-session-id") ?? "" };
  }

  /** A plain-text completion (no chat template): POST /v1/completions. */
  async complete(prompt: string, o: GenerateOptions): Promise<Answer> {
    const r = await this.ok("POST", "/v1/completions", { model: "eval", prompt, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed }, this.turnHeaders(o));
    const body = r.json as { choices: Array<{ text: string }> };
    return this.answerOf(r, body.choices[0].text);
  }

  /** Total log-prob of a text's tokens under the served adapter (echo + max_tokens 0) and how many were scored. */
  async scoreText(text: string): Promise<{ sum: number; tokens: number }> {
    const r = await this.ok("POST", "/v1/completions", { model: "eval", prompt: text, max_tokens: 0, echo: true, logprobs: 0 });
    const lps = (r.json as { choices: Array<{ logprobs: { token_logprobs: Array<number | null> } }> }).choices[0].logprobs.token_logprobs.filter((x): x is number => x !== null);
    return { sum: lps.reduce((a, b) => a + b, 0), tokens: lps.length };
  }

  async chat(messages: Array<{ role: string; content: string }>, o: GenerateOptions): Promise<Answer> {
    const r = await this.ok("POST", "/v1/chat/completions", { model: "eval", messages, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed }, this.turnHeaders(o));
    const body = r.json as { choices: Array<{ message: { content: string | null } }> };
    return this.answerOf(r, body.choices[0].message.content ?? "");
  }

  async feedback(turnId: string, thumbs: "up" | "down" | undefined, hint: string | undefined): Promise<void> {
    await this.ok("POST", "/api/feedback", { turnId, ...(thumbs ? { thumbs } : {}), ...(hint ? { hint } : {}) });
  }

  async patchSettings(s: Record<string, unknown>): Promise<void> {
    await this.ok("PATCH", "/api/settings", s);
  }

  async status(): Promise<StatusView> {
    return (await this.ok("GET", "/api/status")).json as StatusView;
  }

  /** null when the core has no learning loop (no /api/checkpoints route). */
  async checkpoints(): Promise<CheckpointView[] | null> {
    const r = await this.call("GET", "/api/checkpoints");
    if (r.status === 404) return null;
    if (r.status !== 200) throw new Error(`GET /api/checkpoints answered ${r.status}`);
    return (r.json as { checkpoints: CheckpointView[] }).checkpoints;
  }
}

export interface StatusView {
  adapter?: string;
  training?: { state?: string; samplesWaiting?: number; judgeQueue?: number; lastError?: string | null; activeCheckpoint?: number | null; batchSize?: number };
}

export interface CheckpointView {
  n: number;
  version: string;
  parent: number | null;
  verdict: string;
  samples: number;
  kl: number | null;
  loss: number | null;
  totalSteps: number;
  active: boolean;
  createdAt: string;
  gate: { reasons: string[] };
  /** set when the watch on the served adapter rolled it back */
  reverted?: { at: string; reason: string } | null;
}

import type { Reaction, Scenario, TextRule } from "./scenario.js";

/** Whether an answer's text passes a rule. */
export function matchRule(rule: TextRule, text: string): boolean {
  if ("regex" in rule) return new RegExp(rule.regex, rule.flags ?? "i").test(text);
  if ("contains" in rule) return text.toLowerCase().includes(rule.contains.toLowerCase());
  if ("minLength" in rule) return text.trim().length >= rule.minLength;
  if ("maxLength" in rule) return text.trim().length <= rule.maxLength;
  if ("not" in rule) return !matchRule(rule.not, text);
  if ("all" in rule) return rule.all.every((r) => matchRule(r, text));
  return rule.any.some((r) => matchRule(r, text));
}

/** The simulated user's reaction to an answer: the first matching rule's, else `otherwise`, else none. */
export function reactionFor(s: Scenario, answer: string): Reaction | null {
  for (const r of s.reactions.rules) if (matchRule(r.when, answer)) return r.react;
  return s.reactions.otherwise ?? null;
}

/** Rule scorer: weighted share of the checks an answer passes, 0..1. */
export function ruleScore(checks: Array<{ rule: TextRule; weight: number }>, answer: string): number {
  let total = 0;
  let hit = 0;
  for (const c of checks) {
    total += c.weight;
    if (matchRule(c.rule, answer)) hit += c.weight;
  }
  return total > 0 ? hit / total : 0;
}

/** The last `\boxed{x}` or, without one, the last number in a judge's reply; null when none. */
export function parseJudgeScore(reply: string): number | null {
  const boxed = [...reply.matchAll(/\\boxed\{\s*(-?\d+(?:\.\d+)?)\s*\}/g)];
  if (boxed.length) return Number(boxed[boxed.length - 1][1]);
  const nums = [...reply.matchAll(/-?\d+(?:\.\d+)?/g)];
  return nums.length ? Number(nums[nums.length - 1][0]) : null;
}

export type AnswerScorer = (prompt: string, answer: string) => Promise<number>;

/** A scorer function for the scenario's scorer (rules, or an OpenAI-compatible judge). */
export function makeScorer(s: Scenario, fetchImpl: typeof fetch = fetch): AnswerScorer {
  const sc = s.scorer;
  if (sc.kind === "rules") return async (_p, a) => ruleScore(sc.checks, a);
  const base = sc.url.replace(/\/+$/, "");
  const token = sc.tokenEnv ? process.env[sc.tokenEnv] : undefined;
  return async (prompt, answer) => {
    const content = sc.prompt.split("{prompt}").join(prompt).split("{answer}").join(answer);
    let res: Response;
    try {
      res = await fetchImpl(`${base}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ model: sc.model, messages: [{ role: "user", content }], temperature: 0, max_tokens: 64 }),
      });
    } catch (e) {
      throw new Error(`judge ${base}: cannot connect: ${(e as Error).message}`, { cause: e });
    }
    if (!res.ok) throw new Error(`judge ${base}: HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    const body = (await res.json()) as { choices?: Array<{ message?: { content?: string | null } }> };
    const reply = body.choices?.[0]?.message?.content ?? "";
    const n = parseJudgeScore(reply);
    if (n === null) throw new Error(`judge ${base}: no score in its reply '${reply.slice(0, 80)}'`);
    return Math.min(1, Math.max(0, n / sc.scale));
  };
}

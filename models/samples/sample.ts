import { z } from "zod";

/**
 * Training samples, one JSON object per line. Two forms, which may be combined:
 * - text: `{"messages": [...], "response": "…"}`: tokenized here with the model's chat template;
 * - live loop: `{"prompt_tokens": [...], "response_tokens": [...], "logprobs"?: [...]}`: exactly
 *   what was served; preferred when present (no re-tokenization drift), and `logprobs` (the
 *   serving policy's log-probs of the response tokens) are then lp_old.
 * `reward` (−1/0/1, or a weak reward between) feeds the RL term, `hint` the OPD term (`hints`: candidates for top-k
 * select). A hint needs `messages`: the teacher's prompt is the hint-augmented conversation.
 * `teacher_prompt_tokens`: context distillation (the live loop's preferences): the prompt the
 * answer was served with, the preference block in it; the teacher scores the response after it
 * while the student (`prompt_tokens`, the client's prompt alone) learns to answer as it does.
 * `prompt_tokens` with `response` (text, no `response_tokens`): a response that was never served (the
 * live loop's answer edits: electron/core/rollout/samples.ts), tokenized here after the exact prompt.
 * `format: "completion"`: the prompt is plain text (a base model's /v1/completions; the one
 * user message holds it), no chat template; the teacher reads the hint as a paragraph before it.
 */

const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

export const messageSchema = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
});
export type ChatMessage = z.infer<typeof messageSchema>;

const tokenIds = z.array(z.number().int().nonnegative());

export const sampleSchema = z
  .object({
    messages: z.array(messageSchema).min(1).optional(),
    response: z.string().optional(),
    /** −1, 0 or 1; a value between is a weak reward (the live loop's at-least-one rule: electron/core/rollout/atLeastOne.ts) */
    reward: z
      .number({ error: "reward must be a number from -1 to 1" })
      .min(-1, { error: "reward must be a number from -1 to 1" })
      .max(1, { error: "reward must be a number from -1 to 1" })
      .optional(),
    hint: z.string().min(1).optional(),
    hints: z.array(z.string().min(1)).min(1).optional(),
    prompt_tokens: tokenIds.min(1).optional(),
    response_tokens: tokenIds.min(1).optional(),
    logprobs: z.array(z.number().finite().max(0)).optional(),
    teacher_prompt_tokens: tokenIds.min(1).optional(),
    format: z.enum(["chat", "completion"]).optional(),
  })
  .loose()
  .superRefine((s, ctx) => {
    const live = s.prompt_tokens !== undefined || s.response_tokens !== undefined;
    // prompt_tokens with a `response` text: the served prompt exactly, a response that was never served (an answer edit: the trainer tokenizes it).
    if (live && (s.prompt_tokens === undefined || (s.response_tokens === undefined && s.response === undefined))) {
      ctx.addIssue({ code: "custom", message: "prompt_tokens and response_tokens go together (or prompt_tokens with a response text)" });
    }
    if (!live && (s.messages === undefined || s.response === undefined)) {
      ctx.addIssue({ code: "custom", message: "needs messages + response (or prompt_tokens + response_tokens)" });
    }
    if (s.logprobs !== undefined) {
      if (s.response_tokens === undefined) ctx.addIssue({ code: "custom", message: "logprobs need response_tokens" });
      else if (s.logprobs.length !== s.response_tokens.length) {
        ctx.addIssue({ code: "custom", message: `logprobs has ${s.logprobs.length} values for ${s.response_tokens.length} response_tokens` });
      }
    }
    if (s.teacher_prompt_tokens !== undefined && s.prompt_tokens === undefined) {
      ctx.addIssue({ code: "custom", message: "teacher_prompt_tokens need prompt_tokens (the student's prompt)" });
    }
    if ((s.hint !== undefined || s.hints !== undefined) && s.messages === undefined) {
      ctx.addIssue({ code: "custom", message: "a hint needs messages (the teacher sees the conversation with the hint appended)" });
    }
    if (s.messages !== undefined && !s.messages.some((m) => m.role === "user")) {
      ctx.addIssue({ code: "custom", message: "messages have no user message" });
    }
  });

export type Sample = z.infer<typeof sampleSchema>;

/** The hint candidates of a sample (`hint` first, then `hints`, de-duplicated). */
export function sampleHints(s: Sample): string[] {
  return [...new Set([...(s.hint !== undefined ? [s.hint] : []), ...(s.hints ?? [])])];
}

/** One-line description of the first problem zod found. */
function describeIssue(err: z.ZodError): string {
  const issue = err.issues[0];
  const where = issue.path.length ? `${issue.path.join(".")}: ` : "";
  return `${where}${issue.message}`;
}

/** Validates one parsed value; the error names the line. */
export function parseSample(value: unknown, line: number, file = "data"): Sample {
  const r = sampleSchema.safeParse(value);
  if (!r.success) throw new Error(`${file}:${line}: invalid sample: ${describeIssue(r.error)}`);
  return r.data;
}

/**
 * Parses JSONL text: blank lines are skipped, every other line must be a valid sample
 * (error: `FILE:LINE: ...`). Returns the samples with their line numbers.
 */
export function parseSamplesJsonl(text: string, file = "data"): Array<{ sample: Sample; line: number }> {
  const out: Array<{ sample: Sample; line: number }> = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (raw === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not valid JSON (${(e as Error).message.split("\n")[0]})`, { cause: e });
    }
    out.push({ sample: parseSample(value, i + 1, file), line: i + 1 });
  }
  if (out.length === 0) throw new Error(`${file}: no samples`);
  return out;
}

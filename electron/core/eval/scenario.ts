import fs from "node:fs";
import { z } from "zod";

/**
 * An eval scenario (JSON): a simulated user with training prompts it sends and reacts to,
 * held-out prompts that are only scored, the prompt template, the reaction rules, the scorer,
 * and the sampling plan (samples per held-out prompt × seeds).
 */

/** A test on an answer's text. `regex` is case-insensitive unless `flags` says otherwise. */
export type TextRule =
  | { regex: string; flags?: string }
  | { contains: string }
  | { minLength: number }
  | { maxLength: number }
  | { not: TextRule }
  | { all: TextRule[] }
  | { any: TextRule[] };

const regexSource = z
  .string()
  .min(1)
  .superRefine((src, ctx) => {
    try {
      new RegExp(src);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: `invalid regex /${src}/: ${(e as Error).message}` });
    }
  });

export const textRuleSchema: z.ZodType<TextRule> = z.lazy(() =>
  z.union(
    [
      z.strictObject({
        regex: regexSource,
        flags: z
          .string()
          .regex(/^[imsu]*$/, "flags may only use i, m, s, u")
          .optional(),
      }),
      z.strictObject({ contains: z.string().min(1) }),
      z.strictObject({ minLength: z.number().int().nonnegative() }),
      z.strictObject({ maxLength: z.number().int().nonnegative() }),
      z.strictObject({ not: textRuleSchema }),
      z.strictObject({ all: z.array(textRuleSchema).min(1) }),
      z.strictObject({ any: z.array(textRuleSchema).min(1) }),
    ],
    { error: "a rule is one of {regex}, {contains}, {minLength}, {maxLength}, {not}, {all}, {any}" },
  ),
);

/** What the user does after an answer: explicit thumbs and/or a hint, and/or a next message the judge reads. */
const reactionSchema = z
  .strictObject({
    thumbs: z.enum(["up", "down"]).optional(),
    hint: z.string().min(1).optional(),
    next: z.string().min(1).optional(),
  })
  .refine((r) => r.thumbs !== undefined || r.hint !== undefined || r.next !== undefined, { message: "a reaction needs thumbs, hint or next" });
export type Reaction = z.infer<typeof reactionSchema>;

const reactionRuleSchema = z.strictObject({ when: textRuleSchema, react: reactionSchema });

const templateSchema = z.discriminatedUnion("kind", [
  /** Plain text completion (base models): `{prompt}` is replaced by the prompt; served through /v1/completions. */
  z.strictObject({
    kind: z.literal("completion"),
    text: z.string().includes("{prompt}", { message: "the completion template must contain {prompt}" }).default("{prompt}"),
  }),
  /** Chat messages; `{prompt}` in any message's content is replaced. Served through /v1/chat/completions. */
  z.strictObject({
    kind: z.literal("chat"),
    messages: z
      .array(z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string() }))
      .min(1)
      .refine((ms) => ms.some((m) => m.role === "user" && m.content.includes("{prompt}")), { message: "a user message must contain {prompt}" })
      .default([{ role: "user", content: "{prompt}" }]),
  }),
]);

const scoreCheckSchema = z.strictObject({ rule: textRuleSchema, weight: z.number().positive().default(1), name: z.string().optional() });

const scorerSchema = z.discriminatedUnion("kind", [
  /** Score of an answer = weighted share of checks it passes (0..1). */
  z.strictObject({ kind: z.literal("rules"), checks: z.array(scoreCheckSchema).min(1) }),
  /**
   * An OpenAI-compatible judge: `prompt` (with {prompt} and {answer}) is sent as the user message;
   * the last number in the reply (or \boxed{x}) divided by `scale` is the score, clamped to 0..1.
   */
  z.strictObject({
    kind: z.literal("judge"),
    url: z.url({ error: "the judge url must be a URL (the API base, e.g. http://host/v1)" }),
    model: z.string().default("judge"),
    tokenEnv: z.string().optional(),
    prompt: z.string().includes("{answer}", { message: "the judge prompt must contain {answer}" }),
    scale: z.number().positive().default(1),
  }),
]);
export type Scorer = z.infer<typeof scorerSchema>;

export const scenarioSchema = z
  .strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    template: templateSchema,
    trainPrompts: z.array(z.string().min(1)).min(1),
    heldOutPrompts: z.array(z.string().min(1)).min(1),
    /** First matching rule wins; `otherwise` applies when none matches (no reaction when absent). */
    reactions: z.strictObject({ rules: z.array(reactionRuleSchema).default([]), otherwise: reactionSchema.optional() }),
    scorer: scorerSchema,
    samplesPerPrompt: z.number().int().min(1).max(64).default(4),
    seeds: z.array(z.number().int().nonnegative()).min(1).default([1, 2, 3]),
    generation: z
      .strictObject({ maxTokens: z.number().int().min(1).max(4096).default(48), temperature: z.number().min(0).max(2).default(1) })
      .default({ maxTokens: 48, temperature: 1 }),
    /** Learning-loop settings for the run (the app's /api/settings names). */
    training: z
      .strictObject({
        batchSize: z.number().int().min(1).default(4),
        loraRank: z.number().int().min(1).optional(),
        loraAlpha: z.number().positive().optional(),
        learningRate: z.number().positive().optional(),
        /** optimizer steps per learning cycle, fixed (absent: the app's steps policy, training/stepsPolicy.ts) */
        stepsPerRun: z.number().int().min(1).optional(),
        /** KL bound of the publish gate for the run (nats/token). */
        klBound: z.number().positive().optional(),
        /** fluency margin of the publish gate for the run (nats/token; gate.ts FLUENCY_MARGIN when absent) */
        fluencyMargin: z.number().positive().optional(),
        /** OPD teacher: the current policy with the hint, or the base model with the hint */
        teacherSource: z.enum(["policy", "base"]).optional(),
        /** β of the KL to the base model in the loss (absent: the app's default) */
        klBeta: z.number().min(0).optional(),
      })
      .default({ batchSize: 4 }),
    /** Score every N interactions (default: every batch). */
    evalEvery: z.number().int().min(1).optional(),
    /**
     * Hints become preferences in the prompt of the training turns (issue 20; the app's default).
     * Off by default so the figures measured before preferences existed stay comparable; the
     * held-out scoring is side turns, which never carry the block, so it measures the weights.
     */
    preferences: z.boolean().default(false),
  })
  .superRefine((s, ctx) => {
    const train = new Set(s.trainPrompts);
    const leaked = s.heldOutPrompts.filter((p) => train.has(p));
    if (leaked.length) ctx.addIssue({ code: "custom", path: ["heldOutPrompts"], message: `held-out prompt also used for training: '${leaked[0]}'` });
    if (s.reactions.rules.length === 0 && !s.reactions.otherwise)
      ctx.addIssue({ code: "custom", path: ["reactions"], message: "the user never reacts: give rules or otherwise" });
  });

export type Scenario = z.infer<typeof scenarioSchema>;

export class ScenarioError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ScenarioError";
  }
}

/** Validates a parsed scenario; the error names the file, the path and the problem, on one line. */
export function parseScenario(value: unknown, file = "scenario"): Scenario {
  const r = scenarioSchema.safeParse(value);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ScenarioError(`${file}: ${i.path.length ? `${i.path.join(".")}: ` : ""}${i.message}`);
  }
  return r.data;
}

export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new ScenarioError(`${file}: cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ScenarioError(`${file}: not valid JSON: ${(e as Error).message}`);
  }
  return parseScenario(value, file);
}

/** The rendered request for one prompt: a plain completion prompt or chat messages. */
export function renderPrompt(
  s: Scenario,
  prompt: string,
): { kind: "completion"; prompt: string } | { kind: "chat"; messages: Array<{ role: string; content: string }> } {
  const fill = (t: string) => t.split("{prompt}").join(prompt);
  if (s.template.kind === "completion") return { kind: "completion", prompt: fill(s.template.text) };
  return { kind: "chat", messages: s.template.messages.map((m) => ({ role: m.role, content: fill(m.content) })) };
}

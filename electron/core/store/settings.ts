import { z } from "zod";

/**
 * The user's settings, with defaults (method.md). Parsing `{}` gives the defaults; a saved file
 * from an older version gains new keys with their defaults. Other modules read them through
 * the Store; the UI changes them with PATCH /api/settings.
 */
export const JudgeSourceSchema = z.discriminatedUnion("kind", [
  /** the served model without its adapter, in a separate context */
  z.object({ kind: z.literal("base") }).strict(),
  z.object({ kind: z.literal("gguf"), path: z.string().min(1) }).strict(),
  z
    .object({ kind: z.literal("endpoint"), baseUrl: z.url(), model: z.string().min(1), apiKey: z.string().optional() })
    .strict(),
]);

export const SettingsSchema = z
  .object({
    learningMethod: z.enum(["combined", "binary", "opd", "topk"]).default("combined"),
    /** samples per training batch (method.md: 16; 4 for top-k) */
    batchSize: z.int().min(1).max(1024).default(16),
    learningRate: z.number().positive().max(1).default(1e-4),
    loraRank: z.int().min(1).max(256).default(16),
    loraAlpha: z.number().positive().max(1024).default(32),
    judgeVotes: z.int().min(1).max(15).default(3),
    judgeTemperature: z.number().min(0).max(2).default(0.6),
    judgeSource: JudgeSourceSchema.default({ kind: "base" }),
    /** OPD teacher: the current policy (default) or the base model */
    teacherSource: z.enum(["policy", "base"]).default("policy"),
    /** train automatically when a batch is ready */
    autoLearn: z.boolean().default(true),
    /**
     * Turn type for an outside client that sends rl headers (a session id) but no turn type:
     * "side", as in the reference plugin.
     */
    outsideDefaultTurnType: z.enum(["main", "side"]).default("side"),
    /** Outside clients that send no rl headers at all (OpenClaw without the plugin, any SDK): main turns (issue 10). */
    headerlessTurnsMain: z.boolean().default(true),
    /** a session with no request for this long is closed (its last turn gets no next state) */
    sessionIdleMinutes: z.number().positive().max(7 * 24 * 60).default(30),
    /** inference backend: auto = CUDA, then Vulkan, then CPU */
    backend: z.enum(["auto", "cuda", "vulkan", "cpu"]).default("auto"),
    /** answer length when a request sets none (OpenAI clients usually send one; our chat UI relies on this) */
    defaultMaxTokens: z.int().min(1).max(1_000_000).default(2048),
    /** trainer's longest sample in tokens; null = fitted to the backend */
    maxTrainContext: z.int().min(64).nullable().default(null),
  })
  .strict();

export type Settings = z.infer<typeof SettingsSchema>;
export type JudgeSource = z.infer<typeof JudgeSourceSchema>;

export const defaultSettings = (): Settings => SettingsSchema.parse({});

/** Applies a partial change; throws SettingsError naming the first bad field. */
export function applySettingsPatch(current: Settings, patch: unknown): Settings {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) throw new SettingsError("settings must be a JSON object");
  const r = SettingsSchema.safeParse({ ...current, ...patch });
  if (!r.success) throw new SettingsError(formatIssue(r.error.issues[0]));
  return r.data;
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SettingsError";
  }
}

export function formatIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join(".") : "";
  if (issue.code === "unrecognized_keys") return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${[where, k].filter(Boolean).join(".")}'`).join(", ")}`;
  return `${where ? `'${where}': ` : ""}${issue.message}`;
}

/**
 * The settings schema with its defaults (GET|PATCH /api/settings), one source: defined here, in
 * the contract (this file imports only zod, the LoRA defaults and ./generationLimits.ts). The
 * store (store/settings.ts) applies changes with it and keeps them in state.json; the renderer
 * imports the types only: the settings' values reach it through GET /api/settings, the chat's
 * built-in defaults through generationLimits.ts CHAT_DEFAULTS.
 */
import { z } from "zod";
import { LORA_DEFAULTS } from "../../../models/adapters/loraDefaults.js";
import { CHAT_DEFAULTS, DEFAULT_MAX_TOKENS, GENERATION_LIMITS as L } from "./generationLimits.js";
import { ModelLoadMapSchema } from "./modelLoad.js";

/**
 * The user's settings, with defaults (method.md). Parsing `{}` gives the defaults; a saved file
 * from an older version gains new keys with their defaults. Other modules read them through
 * the Store; the UI changes them with PATCH /api/settings.
 */
export const JudgeSourceSchema = z.discriminatedUnion("kind", [
  /** the served model without its adapter, in a separate context */
  z.object({ kind: z.literal("base") }).strict(),
  z.object({ kind: z.literal("gguf"), path: z.string().min(1) }).strict(),
  z.object({ kind: z.literal("endpoint"), baseUrl: z.url(), model: z.string().min(1), apiKey: z.string().optional() }).strict(),
]);

/**
 * Default β of the KL to the base model (trainer/loss/ppo.ts, k3 on the trained tokens): 0.1,
 * with the publish gate's drift budget and fluency check doing the rest. Measured on stories260K
 * (bench/eval-stories.ts, 64 interactions, every scoring's fluency vs the base model's −1.39):
 * - without the gate's drift and fluency checks, binary RL on the cats eval (almost only thumbs
 *   down) lost 0.84 / 1.17 / 0.40 / 0.19 nats/token by 64 interactions with β 0 / 0.1 / 0.3 / 1:
 *   the anchor alone needs β 1 (the k3 term sees the sampled tokens only, so a small β barely
 *   holds back the mass unlikelihood spreads over the rest of the vocabulary);
 * - with them, β 0.1 lost at most 0.34 (the gate rejected 4 of 13 candidates for drift or
 *   fluency), while combined kept a gain beyond its interval on the cats eval (+0.090 [0.049,
 *   0.132]) where β 1 had none (+0.007 [−0.028, 0.042]; β 0.3: +0.028 [−0.014, 0.069]). On the
 *   animals eval, combined: +0.181 [0.076, 0.292] with β 0.1 (fluency −1.67), +0.194 [0.118,
 *   0.264] with β 1 (−1.51). Since then the anchor's reference for a hinted sample is the base
 *   model given the hint (trainSteps.ts): with β 0.1, combined +0.257 [0.139, 0.382] on animals
 *   (−1.61) and +0.097 [0.035, 0.153] on cats.
 */
export const KL_BETA_DEFAULT = 0.1;

/** Default share of main turns held back from training: one in eight. */
export const HELD_BACK_DEFAULT = 0.125;

export const ChatDefaultsSchema = z
  .object({
    systemPrompt: z.string().max(L.systemPromptChars),
    temperature: z.number().min(L.temperature.min).max(L.temperature.max),
    topP: z.number().min(L.topP.min).max(L.topP.max),
    maxTokens: z.int().min(L.maxTokens.min).max(L.maxTokens.max).nullable(),
    /** the chat's tool steps per answer (issue 29); absent in settings saved before it: the default */
    toolSteps: z.int().min(L.toolSteps.min).max(L.toolSteps.max).default(L.toolSteps.default),
  })
  .strict();

export const SettingsSchema = z
  .object({
    learningMethod: z.enum(["combined", "binary", "opd", "topk"]).default("combined"),
    /** samples per training batch (method.md: 16; 4 for top-k) */
    batchSize: z.int().min(1).max(1024).default(16),
    learningRate: z.number().positive().max(1).default(1e-4),
    loraRank: z.int().min(1).max(256).default(LORA_DEFAULTS.rank),
    loraAlpha: z.number().positive().max(1024).default(LORA_DEFAULTS.alpha),
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
    sessionIdleMinutes: z
      .number()
      .positive()
      .max(7 * 24 * 60)
      .default(30),
    /** inference backend: auto = CUDA, then Vulkan, then CPU */
    backend: z.enum(["auto", "cuda", "vulkan", "cpu"]).default("auto"),
    /** each model's load settings (context, GPU layers, threads, backend) by model file: api/modelLoad.ts */
    modelLoad: ModelLoadMapSchema.default({}),
    /**
     * answer length when a request sets none (OpenAI clients usually send one), at most half the
     * model's context: api/generationLimits.ts defaultAnswerTokens, which our chat UI sends too
     */
    defaultMaxTokens: z.int().min(1).max(1_000_000).default(DEFAULT_MAX_TOKENS),
    /** trainer's longest sample in tokens; null = fitted to the backend */
    maxTrainContext: z.int().min(64).nullable().default(null),
    /**
     * β of the k3 KL to the base model in the training loss: the anchor that keeps what is
     * learned near the model it started from (0 = no anchor). Default: KL_BETA_DEFAULT.
     */
    klBeta: z.number().min(0).max(10).default(KL_BETA_DEFAULT),
    /**
     * Share of main turns held back from training, decided per turn from its session id and
     * position (rollout/heldBack.ts): the publish gate and the watch on the served adapter
     * check on them. 0 = none held back.
     */
    heldBackShare: z.number().min(0).max(0.5).default(HELD_BACK_DEFAULT),
    /** Active preferences go into the system prompt of main turns (electron/core/preferences/). */
    preferencesInPrompt: z.boolean().default(true),
    /** ...of outside clients' main turns too (off: only the app's own chat gets them). */
    preferencesForOutsideClients: z.boolean().default(true),
    /** Most prompt tokens the preference block may take; the newest preferences go first. */
    preferenceTokenBudget: z.int().min(16).max(4096).default(256),
    /**
     * A hint the judge reads from the user's next message becomes a preference when the same
     * hint recurs on JUDGE_HINT_RECURRENCE recent turns (preferences/fromHints.ts); the user can
     * always keep one by hand from the Training page.
     */
    preferencesFromJudge: z.boolean().default(true),
    /**
     * A preference is learned when, on held-back answers served with it, the adapter's mean
     * log-prob per token with it in the prompt exceeds that without it by less than this (nats):
     * the adapter alone already answers as the prompt asked. Forgotten again above twice this.
     */
    preferenceLearnedGap: z.number().positive().max(10).default(0.05),
    /** Held-back turns served with a preference that a retirement check needs. */
    preferenceCheckTurns: z.int().min(1).max(64).default(4),
    /**
     * What a new chat in the app starts with (each chat can change its own): sent with each of
     * its requests, the system prompt as the first message (so it is recorded and trained on).
     * maxTokens null: sized to the served model's context.
     */
    chatDefaults: ChatDefaultsSchema.default(() => ({ ...CHAT_DEFAULTS })),
    /**
     * Host names the core answers to besides 127.0.0.1, localhost and [::1] (a name in the
     * hosts file, a LAN name after binding another address). Any other Host header is refused:
     * a web page on a rebound DNS name cannot reach the core (docs/security.md).
     */
    /**
     * The GGUF /v1/embeddings answers from (an embedding model such as nomic-embed-text, loaded
     * beside the served model with a context of its own); null: the served model's own vectors.
     * An absolute path (an installed model's path, or any GGUF file).
     */
    embeddingModelPath: z
      .string()
      .trim()
      .regex(/^(\/|[A-Za-z]:[\\/]|\\\\)/, "an absolute path to a GGUF file")
      .nullable()
      .default(null),
    allowedHosts: z
      .array(
        z
          .string()
          .trim()
          .toLowerCase()
          .regex(/^(\[[0-9a-f:.]+\]|[a-z0-9\-._]+)$/, "a host name without port or scheme"),
      )
      .max(32)
      .default([]),
  })
  .strict();

export type Settings = z.infer<typeof SettingsSchema>;
export type JudgeSource = z.infer<typeof JudgeSourceSchema>;

export const defaultSettings = (): Settings => SettingsSchema.parse({});

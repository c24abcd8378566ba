/**
 * How a model is loaded (issue 32, "load settings per model"): context length, GPU layers, CPU
 * threads and the compute backend. One schema for the UI's Load settings panel (GET/PUT
 * /api/models/:id/load-settings, POST /api/models/reload {id}) and `clawrl serve`'s flags
 * (--context, --gpu-layers, --threads, --gpu): the same names, the same values, the same checks.
 * Stored per model in the settings (`modelLoad`, keyed by the model's file name: the identity its
 * learning line uses, training/checkpoints.ts modelFileOf); a value left out (null) is the app's
 * own choice. For one run of `clawrl serve`, its flags override what is stored.
 */
import { z } from "zod";

/** Compute backends as node-llama-cpp names them; auto = CUDA, then Vulkan, then CPU (Metal, then CPU, on a Mac). */
export const LOAD_BACKENDS = ["auto", "cpu", "vulkan", "cuda", "metal"] as const;
export type LoadBackend = (typeof LOAD_BACKENDS)[number];

/** The largest values the schema takes at all (a model's own limits are checked against the file and the machine: loadSettingsProblems). */
export const LOAD_LIMITS = { contextMin: 16, contextMax: 16_777_216, threadsMax: 1024, gpuLayersMax: 100_000 } as const;

export const GpuLayersSchema = z.union([z.literal("auto"), z.literal("max"), z.int().min(0).max(LOAD_LIMITS.gpuLayersMax)]);

/** Each load setting's values; null: the app picks (the defaults the reply shows). */
const loadFields = {
  /** largest context in tokens; null: the model's trained context, fitted to memory */
  contextSize: z.int().min(LOAD_LIMITS.contextMin).max(LOAD_LIMITS.contextMax).nullable(),
  /** layers offloaded to the GPU: a number, "max" (all) or "auto" (as many as fit); null: auto */
  gpuLayers: GpuLayersSchema.nullable(),
  /** CPU threads per evaluation; null: one for a tiny model, else all math cores */
  threads: z.int().min(1).max(LOAD_LIMITS.threadsMax).nullable(),
  /** compute backend; null: the Settings' backend (auto unless changed) */
  backend: z.enum(LOAD_BACKENDS).nullable(),
};

/** One model's load settings as stored (a field left out is null). */
export const ModelLoadSettingsSchema = z
  .object({
    contextSize: loadFields.contextSize.default(null),
    gpuLayers: loadFields.gpuLayers.default(null),
    threads: loadFields.threads.default(null),
    backend: loadFields.backend.default(null),
  })
  .strict();

export type ModelLoadSettings = z.infer<typeof ModelLoadSettingsSchema>;

/** The settings' map: model file name → its load settings. */
export const ModelLoadMapSchema = z.record(z.string().min(1), ModelLoadSettingsSchema);

/** PUT /api/models/:id/load-settings: the fields to change (null: back to the app's choice). */
export const ModelLoadPatchSchema = z.object(loadFields).partial().strict();
export type ModelLoadPatch = z.infer<typeof ModelLoadPatchSchema>;

/** `clawrl serve`'s flag for each setting (the CLI and the README's table use these). */
export const LOAD_FLAGS = { contextSize: "context", gpuLayers: "gpu-layers", threads: "threads", backend: "gpu" } as const satisfies Record<
  keyof ModelLoadSettings,
  string
>;

/**
 * `clawrl serve`'s load flags (strings, as typed) through the same schema as the API: a flag
 * left out is undefined. Throws an Error whose message names the flag.
 */
export function parseLoadFlags(flags: { context?: string; "gpu-layers"?: string; threads?: string; gpu?: string }): ModelLoadPatch {
  const raw: Record<string, unknown> = {};
  const asInt = (s: string) => (/^\d+$/.test(s.trim()) ? Number(s) : s);
  if (flags.context !== undefined) raw.contextSize = asInt(flags.context);
  if (flags.threads !== undefined) raw.threads = asInt(flags.threads);
  if (flags["gpu-layers"] !== undefined)
    raw.gpuLayers = flags["gpu-layers"] === "auto" || flags["gpu-layers"] === "max" ? flags["gpu-layers"] : asInt(flags["gpu-layers"]);
  if (flags.gpu !== undefined) raw.backend = flags.gpu;
  const r = ModelLoadPatchSchema.safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const key = issue.path[0] as keyof ModelLoadSettings;
  throw new Error(`--${LOAD_FLAGS[key]} ${loadValueRule(key)}, got '${String(raw[key])}'`);
}

/** What a setting accepts, in words (an error message's second half). */
export function loadValueRule(key: keyof ModelLoadSettings): string {
  switch (key) {
    case "contextSize":
      return `must be a whole number of tokens from ${LOAD_LIMITS.contextMin} to ${LOAD_LIMITS.contextMax.toLocaleString("en")}`;
    case "threads":
      return `must be a whole number of threads from 1 to ${LOAD_LIMITS.threadsMax}`;
    case "gpuLayers":
      return "must be auto, max or a number of layers";
    case "backend":
      return `must be one of ${LOAD_BACKENDS.join(", ")}`;
  }
}

/** What the file and the machine allow, for the checks and the form's bounds. */
export interface ModelLoadLimits {
  /** the model's trained context (tokens); null when its header does not say */
  trainContextSize: number | null;
  /** layers the model has (a larger GPU layer count is refused); null when unknown */
  layers: number | null;
  /** CPU threads this machine can run at once */
  cpuThreads: number;
}

/** Plain sentences for values the model or the machine cannot take (empty: fine). The API answers 400 with them. */
export function loadSettingsProblems(s: ModelLoadPatch, limits: ModelLoadLimits): string[] {
  const out: string[] = [];
  if (s.contextSize != null && limits.trainContextSize != null && s.contextSize > limits.trainContextSize)
    out.push(
      `The context length ${s.contextSize.toLocaleString("en")} is longer than this model was trained for (${limits.trainContextSize.toLocaleString("en")} tokens).`,
    );
  if (s.threads != null && s.threads > limits.cpuThreads)
    out.push(`${s.threads} threads is more than this computer runs at once (${limits.cpuThreads}); more threads than cores only slows answers down.`);
  if (typeof s.gpuLayers === "number" && limits.layers != null && s.gpuLayers > limits.layers + 1)
    out.push(`The model has ${limits.layers} layers; ${s.gpuLayers} cannot be offloaded to the GPU (use max for all of them).`);
  return out;
}

/** What the app picks for a setting left to it, shown as "Auto (8192)". null: not known until the model loads. */
export interface ModelLoadDefaults {
  contextSize: number | null;
  gpuLayers: number | null;
  threads: number | null;
  /** the Settings' backend */
  backend: LoadBackend;
}

/** The model as it serves now (when it is the served one). */
export interface ModelLoadServing {
  contextSize: number;
  gpuLayers: number;
  threads: number | null;
  /** the backend it runs on (llama.cpp's name) */
  backend: "cuda" | "vulkan" | "metal" | "cpu";
  /** the backend asked for */
  requested: LoadBackend;
  /** the adapter serving (checkpoint version, or "base") */
  adapter: string;
  /** the settings it was loaded with differ from the stored ones: a reload applies them */
  reloadNeeded: boolean;
}

/** GET and PUT /api/models/:id/load-settings. */
export interface ModelLoadReply {
  /** the installed model's id (or the served file's name when it is not installed) */
  id: string;
  /** the key it is stored under: the model's file name, as its learning line names it */
  modelFile: string;
  name: string;
  /** what the user chose (null: the app's choice) */
  settings: ModelLoadSettings;
  /** what the app picks for each setting left to it */
  defaults: ModelLoadDefaults;
  limits: ModelLoadLimits;
  /** settings `clawrl serve` was given for this run: they win over the stored ones until the core restarts */
  overrides: ModelLoadPatch;
  /** this model as it serves now; null when another model (or none) serves */
  serving: ModelLoadServing | null;
  /**
   * Something the user should know about how it loaded: a backend that could not be used (and
   * what serves instead), or a reload that failed (and that the settings that worked serve again).
   */
  notice: string | null;
}

/** POST /api/models/reload {id}: the model loaded again with its stored settings (its adapter kept). */
export interface ModelReloadReply extends ModelLoadReply {
  /** how long the reload took */
  ms: number;
}

/** GET /api/models/:id/load-settings (the id URI-encoded). */
export type ModelLoadPath = `/api/models/${string}/load-settings`;

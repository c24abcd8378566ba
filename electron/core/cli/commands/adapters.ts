import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { CliError, UsageError, choiceOpt, requiredString, stringOpt, type CommandSpec } from "../command.js";
import { dataPaths, defaultDataDir } from "../../config/paths.js";
import { Store } from "../../store/store.js";
import type { CheckpointEntry } from "../../training/checkpoints.js";
import { EXPORT_FORMATS } from "../../adapters/exportAdapter.js";
import { ApiClient, type RawReply } from "../../api/apiClient.js";
import type { ImportReply } from "../../api/training.js";

const ACTIONS = ["list", "export", "import"] as const;
/** Where `clawrl serve` listens unless told otherwise. */
const SERVE_DEFAULT_URL = "http://127.0.0.1:8765";

export const adapters: CommandSpec = {
  name: "adapters",
  usage:
    "list | export N --format gguf|peft|ollama --out DIR [--base FILE] [--base-model-id ID] | import PATH [--url URL --token T] [--model FILE|ID]  [--data-dir DIR]",
  summary:
    "Checkpoint adapters in and out of the app. export: checkpoint N as llama.cpp's LoRA GGUF (with the llama.cpp / llama-server command line), an Ollama Modelfile, " +
    "or a Hugging Face PEFT directory (adapter_model.safetensors + adapter_config.json). import: a PEFT LoRA directory or a llama.cpp LoRA GGUF becomes a candidate " +
    "checkpoint: checked against the served model, converted, and published only if the publish gate passes it.",
  options: {
    format: { type: "string", value: "NAME", description: "export: gguf, peft or ollama" },
    out: { type: "string", value: "DIR", description: "export: the directory to write (created; files replaced atomically)" },
    base: {
      type: "string",
      value: "FILE",
      description: "export: the base GGUF (default: the model the checkpoint was trained on, as its metrics.json records it)",
    },
    "base-model-id": {
      type: "string",
      value: "ID",
      description: "export --format peft: base_model_name_or_path (default: from the base GGUF's metadata, else null)",
    },
    url: {
      type: "string",
      value: "URL",
      description: `import: the running core to import into (default: ${SERVE_DEFAULT_URL} when it is this data dir's core; else the core is started here for the import)`,
    },
    token: { type: "string", value: "T", description: "import: the core's API token (default: the data dir's token file)" },
    model: {
      type: "string",
      value: "FILE|ID",
      description: "import without a running core: the model to serve (default: the one chosen with 'clawrl models use')",
    },
    "data-dir": { type: "string", value: "DIR", description: "the app's data dir (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  positionals: { min: 1, max: 2, names: "an action (list, export, import)" },
  async run(args) {
    const [action, target] = args.positionals;
    if (!(ACTIONS as readonly string[]).includes(action)) throw new UsageError(`unknown action '${action}' (one of ${ACTIONS.join(", ")})`);
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    if (action === "list") {
      if (target) throw new UsageError("'adapters list' takes no argument");
      return list(dataDir);
    }
    if (!target)
      throw new UsageError(
        action === "export" ? "'adapters export' needs a checkpoint number" : "'adapters import' needs the path of a PEFT directory or a LoRA .gguf",
      );
    if (action === "export") return exportCheckpoint(dataDir, target, args);
    return importAdapter(dataDir, target, args);
  },
};

function openStore(dataDir: string): Store {
  if (!fs.existsSync(dataDir)) throw new CliError(`data dir not found: ${dataDir}`);
  return Store.open(dataDir, { readOnly: true });
}

function list(dataDir: string): number {
  const store = openStore(dataDir);
  try {
    const active = store.state.training.activeCheckpoint;
    const all = (store.state.checkpoints as CheckpointEntry[]).slice().sort((a, b) => a.id - b.id);
    if (all.length === 0) console.log("No checkpoints yet.");
    for (const c of all) {
      const tags = [c.id === active ? "active" : "", c.pinned ? "pinned" : "", c.runId.startsWith("import-") ? "imported" : ""].filter(Boolean).join(", ");
      console.log(
        `${c.id === active ? "*" : " "} ${String(c.id).padStart(3)}  ${c.version.padEnd(9)} ${c.verdict.padEnd(9)} ${c.createdAt}  ${c.samples} sample(s)${tags ? `  (${tags})` : ""}`,
      );
    }
  } finally {
    store.close();
  }
  return 0;
}

async function exportCheckpoint(dataDir: string, nArg: string, args: Parameters<CommandSpec["run"]>[0]): Promise<number> {
  if (!/^\d+$/.test(nArg)) throw new UsageError(`checkpoint number must be a positive integer, got '${nArg}'`);
  const n = Number(nArg);
  const format = choiceOpt(args, "format", EXPORT_FORMATS);
  if (!format) throw new UsageError(`--format is required (one of ${EXPORT_FORMATS.join(", ")})`);
  const out = path.resolve(requiredString(args, "out"));
  if (fs.existsSync(out) && !fs.statSync(out).isDirectory()) throw new CliError(`--out is a file, not a directory: ${out}`);
  const baseModelId = stringOpt(args, "base-model-id");
  if (baseModelId !== undefined && format !== "peft") throw new UsageError("--base-model-id applies to --format peft");
  const store = openStore(dataDir);
  let c: CheckpointEntry | undefined;
  try {
    c = (store.state.checkpoints as CheckpointEntry[]).find((x) => x.id === n);
  } finally {
    store.close();
  }
  if (!c) throw new CliError(`no checkpoint ${n} in ${dataDir} ('clawrl adapters list' shows them)`);
  const adapter = path.join(c.dir, "adapter.gguf");
  if (!fs.existsSync(adapter)) throw new CliError(`checkpoint ${n} is damaged: adapter.gguf is missing`);
  if (createHash("sha256").update(fs.readFileSync(adapter)).digest("hex") !== c.sha256.adapter) {
    throw new CliError(`checkpoint ${n} is damaged: adapter.gguf does not match the checksum recorded when it was written`);
  }
  let recorded: { file?: string; arch?: string; nLayer?: number; nEmbd?: number; nVocab?: number } = {};
  try {
    recorded = (JSON.parse(fs.readFileSync(path.join(c.dir, "metrics.json"), "utf8")) as { model?: typeof recorded }).model ?? {};
  } catch {
    // An unreadable metrics.json: --base must say which model.
  }
  const base = stringOpt(args, "base") ?? recorded.file;
  if (!base) throw new CliError(`checkpoint ${n} does not record its base model: pass --base FILE (the GGUF it was trained on)`);
  if (!fs.existsSync(base)) throw new CliError(`the base model of checkpoint ${n} is not at ${base}: pass --base FILE (the GGUF it was trained on)`);
  const { readBaseConfig } = await import("../../../../models/adapters/interchange.js");
  const { exportAdapter } = await import("../../adapters/exportAdapter.js");
  const { AdapterMismatchError } = await import("../../../../models/adapters/interchange.js");
  let cfg;
  try {
    cfg = readBaseConfig(base).config;
  } catch (e) {
    throw new CliError(`cannot read the base model ${base}: ${(e as Error).message}`);
  }
  if (recorded.arch && (recorded.arch !== cfg.arch || recorded.nLayer !== cfg.nLayer || recorded.nEmbd !== cfg.nEmbd || recorded.nVocab !== cfg.nVocab)) {
    throw new CliError(
      `${base} is not the model checkpoint ${n} was trained on (${recorded.arch}, ${recorded.nLayer} layers, dim ${recorded.nEmbd}, vocab ${recorded.nVocab}; this one: ${cfg.arch}, ${cfg.nLayer} layers, dim ${cfg.nEmbd}, vocab ${cfg.nVocab})`,
    );
  }
  try {
    const r = exportAdapter({
      adapterPath: adapter,
      basePath: base,
      format,
      outDir: out,
      label: c.version,
      ...(baseModelId !== undefined ? { baseModelId } : {}),
    });
    console.log(`exported ${c.version} (rank ${r.rank}, alpha ${r.alpha}, ${r.pairs} adapted layers) as ${format} to ${out}:`);
    for (const f of r.files) console.log(`  ${path.basename(f)}`);
    if (format === "peft")
      console.log(
        r.baseModelId
          ? `base_model_name_or_path: ${r.baseModelId}`
          : "base_model_name_or_path: null (the base GGUF does not name its Hugging Face model; --base-model-id ID sets it)",
      );
  } catch (e) {
    if (e instanceof AdapterMismatchError) throw new CliError(`checkpoint ${n} cannot be exported: ${e.message}`);
    throw e;
  }
  return 0;
}

function report(r: ImportReply): number {
  const i = r.imported;
  for (const w of i.warnings) console.error(`note: ${w}`);
  const what = `${i.format === "peft" ? "PEFT" : "llama.cpp"} adapter (rank ${i.rank}, alpha ${Number(i.alpha.toPrecision(6))}, ${i.pairs} adapted layers)`;
  const c = r.checkpoint;
  if (c.verdict === "published") {
    console.log(
      `imported the ${what} as ${c.version}: the publish gate passed it (KL to the serving adapter ${c.kl === null ? "not measured" : c.kl.toPrecision(3)}); it is served now`,
    );
    return 0;
  }
  console.log(
    `imported the ${what} as ${c.version}, but the publish gate rejected it: ${c.gate.reasons.join("; ")}. It is kept for inspection; the served adapter is unchanged.`,
  );
  return 3;
}

async function importAdapter(dataDir: string, source: string, args: Parameters<CommandSpec["run"]>[0]): Promise<number> {
  const abs = path.resolve(source);
  if (!fs.existsSync(abs)) throw new CliError(`${source}: no such file or directory`);
  const paths = dataPaths(dataDir);
  let url = stringOpt(args, "url");
  let token = stringOpt(args, "token");
  if (!token && fs.existsSync(paths.token)) token = fs.readFileSync(paths.token, "utf8").trim();
  if (!url && token && (await answers(SERVE_DEFAULT_URL, token))) url = SERVE_DEFAULT_URL;
  if (url) {
    if (!token) throw new UsageError("--url needs --token (no token file in the data dir)");
    console.log(`importing into the core at ${url}…`);
    let res: RawReply;
    try {
      res = await new ApiClient(url, token).request("POST", "/api/checkpoints/import", { path: abs });
    } catch (e) {
      throw new CliError(`cannot reach the core at ${url}: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`);
    }
    const body = (typeof res.body === "object" ? res.body : null) as (ImportReply & { error?: { message: string } }) | null;
    if (res.status !== 200 || !body) throw new CliError(body?.error?.message ?? `the core answered ${res.status}`);
    return report(body);
  }
  // No running core: start one here, on the chosen model, for the import.
  const { resolveModelArg } = await import("../../models/resolveModel.js");
  const { ModelRegistry } = await import("../../../../models/registry.js");
  const { progressLine } = await import("../progressLine.js");
  let model: string | null;
  try {
    model = await resolveModelArg(new ModelRegistry(paths.models), stringOpt(args, "model"), progressLine("Downloading model"));
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  if (!model) throw new CliError("no model chosen: pass --model FILE|ID (the model the adapter is for), or import into the running app with --url");
  console.log(`no core answers at ${SERVE_DEFAULT_URL} for this data dir: starting one on ${model} for the import (stop the app first if it uses ${dataDir})…`);
  const { startCore } = await import("../../core.js");
  const core = await startCore({ dataDir, model, port: 0, uiDir: "" });
  try {
    if (!core.training) throw new CliError("learning is off for this core, so nothing can pass the publish gate");
    const { ActivationError } = await import("../../training/supervisor.js");
    const { checkpointView } = await import("../../server/routes/training.js");
    try {
      const r = await core.training.importCandidate(abs);
      return report({
        checkpoint: checkpointView(r.checkpoint, { active: core.store.state.training.activeCheckpoint, modelPath: model }),
        imported: r.imported,
        swap: r.swap,
      });
    } catch (e) {
      if (e instanceof ActivationError) throw new CliError(e.message);
      throw e;
    }
  } finally {
    await core.close();
  }
}

/** Whether a core for this token answers at `url`. */
async function answers(url: string, token: string): Promise<boolean> {
  try {
    return (await new ApiClient(url, token).request("GET", "/api/status", undefined, {}, AbortSignal.timeout(1500))).status === 200;
  } catch {
    return false;
  }
}

import fs from "node:fs";
import path from "node:path";
import { CliError, UsageError, stringOpt, type CommandSpec } from "../command.js";
import { dataPaths, defaultDataDir } from "../../config/paths.js";
import { loadCatalog, localMachineFacts, recommendModel } from "../../../../models/catalog.js";
import { fmtBytes } from "../../../../models/downloader.js";
import { progressLine } from "../progressLine.js";
import { resolveModelSource } from "../../../../models/hfSource.js";
import { pullModel } from "../../../../models/pull.js";
import { ModelRegistry } from "../../../../models/registry.js";
import { assertLoadableGguf } from "../../../../models/gguf/loadable.js";
import { APP_TRAIN_CONTEXT, serveOnly, trainabilityPhrase } from "../../../../models/trainVerdict.js";
import { SettingsSchema } from "../../api/settings.js";
import { hostAvailableBytes } from "../../../../models/plan/available.js";

const ACTIONS = ["list", "pull", "import", "use", "remove", "rm"] as const;

export const models: CommandSpec = {
  name: "models",
  usage: "list | pull <id|hf:owner/repo/file.gguf> | import <file> | use <id|file> | remove|rm <id>  [--data-dir DIR]",
  summary: "Manage models: the recommended catalog, downloads (resumable, checksum-verified), local imports, the active model.",
  options: {
    "data-dir": { type: "string", value: "DIR", description: "the app's data dir (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  positionals: { min: 1, max: 2, names: "an action (list, pull, import, use, remove or rm)" },
  async run(args) {
    const [action, target] = args.positionals;
    if (!(ACTIONS as readonly string[]).includes(action)) throw new UsageError(`unknown action '${action}' (one of ${ACTIONS.join(", ")})`);
    if (action !== "list" && !target) throw new UsageError(`'models ${action}' needs ${action === "import" ? "a file" : "a model id"}`);
    if (action === "list" && target) throw new UsageError(`'models list' takes no argument`);
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    const registry = new ModelRegistry(dataPaths(dataDir).models);

    try {
      switch (action) {
        case "list": {
          const installed = registry.list();
          const active = registry.active();
          // The planning brings tfjs-core: loaded here, not when the CLI starts.
          const { catalogPlanner, catalogFootprint, installedTrainability, trainabilityOf } = await import("../../../../models/trainability.js");
          const train = trainingFacts(dataDir);
          const facts = localMachineFacts();
          const rec = recommendModel({ ...facts, planTraining: catalogPlanner({ maxContext: train.maxContext, rank: train.rank }) });
          const opts = { hostBytes: train.hostBytes, maxContext: train.maxContext, rank: train.rank };
          // The trainer's memory plan per model, on wasm (the backend every machine has) with the RAM available now.
          const installedRows = installed.map((m) => ({
            m,
            verdict: trainabilityPhrase(m.trainable ? installedTrainability(m.path, opts) : serveOnly(m.architecture), m.architecture),
          }));
          const catalogRows = loadCatalog().map((c) => {
            const shape = catalogFootprint(c);
            return { c, verdict: trainabilityPhrase(shape && trainabilityOf(shape, opts)) };
          });
          const width = Math.max(0, ...installedRows.map((r) => r.verdict.length), ...catalogRows.map((r) => r.verdict.length));
          console.log("Installed:");
          if (installed.length === 0) console.log("  (none: 'clawrl models pull <id>' or 'clawrl models import <file>')");
          for (const { m, verdict } of installedRows) {
            console.log(
              `  ${m.id === active?.id ? "*" : " "} ${m.id.padEnd(28)} ${m.architecture.padEnd(7)} ${fmtBytes(m.sizeBytes).padStart(9)}  ${verdict.padEnd(width)}  ${m.path}`,
            );
          }
          console.log("\nCatalog:");
          for (const { c, verdict } of catalogRows) {
            const mark = c.id === rec.entry.id ? "  (recommended)" : "";
            console.log(
              `  ${c.id.padEnd(24)} ${c.architecture.padEnd(6)} ${c.quantization.padEnd(7)} ${fmtBytes(c.sizeBytes).padStart(9)}  ctx ${String(c.contextLength).padStart(6)}  ${verdict.padEnd(width)}${mark}`.trimEnd(),
            );
          }
          console.log(
            `\nTraining verdicts: the trainer's memory plan on wasm with ${(train.hostBytes / 2 ** 30).toFixed(1)} GiB of RAM available` +
              `${facts.trainerRamLimitBytes != null ? " (CLAWRL_TRAINER_RAM_LIMIT)" : ""}, a training context of ${train.maxContext} tokens and LoRA rank ${train.rank}; a GPU backend may fit more.`,
          );
          console.log(`Recommended for this machine: ${rec.entry.id}. ${rec.reason}`);
          return 0;
        }
        case "pull": {
          const ac = new AbortController();
          process.once("SIGINT", () => ac.abort());
          const source = resolveModelSource(target);
          console.error(`Downloading ${source.repo}/${source.file}…`);
          const m = await pullModel(registry, target, { onProgress: progressLine("Downloading"), signal: ac.signal });
          if (process.stderr.isTTY) process.stderr.write("\n");
          console.log(`Downloaded ${m.id} to ${m.path} (${fmtBytes(m.sizeBytes)}, sha256 ${m.sha256})`);
          if (!m.trainable) console.log(`Note: architecture '${m.architecture}' can be served but not trained (the trainer supports llama, qwen2, qwen3).`);
          return 0;
        }
        case "import": {
          const m = registry.importFile(target);
          console.log(`Imported ${m.id} (${m.architecture}, ${fmtBytes(m.sizeBytes)}) from ${m.path}`);
          if (!m.trainable) console.log(`Serve-only: the trainer does not support architecture '${m.architecture}' (it supports llama, qwen2, qwen3).`);
          return 0;
        }
        case "use": {
          const m = registry.get(target) ?? (fs.existsSync(target) ? registry.importFile(target) : undefined);
          if (!m) throw new CliError(`no installed model '${target}' and no such file (see 'clawrl models list')`);
          assertLoadableGguf(m.path); // a file changed since its import is refused now, not at the next start
          registry.setActive(m.id);
          console.log(`Active model: ${m.id} (${m.path})`);
          return 0;
        }
        case "remove":
        case "rm": {
          const size = fs.existsSync(registry.get(target)?.path ?? "") ? fs.statSync(registry.get(target)!.path).size : 0;
          const m = registry.remove(target);
          console.log(
            `Removed ${m.id}${m.origin === "import" ? " from the list (the imported file was left in place)" : ` and deleted ${m.path}, freeing ${fmtBytes(size)}`}.` +
              " Its checkpoints stay, in its learning line: they serve again if the same file is installed again.",
          );
          return 0;
        }
      }
    } catch (err) {
      if (err instanceof UsageError || err instanceof CliError) throw err;
      throw new CliError((err as Error).message);
    }
    return 0;
  },
};

/**
 * What the trainer would plan with: RAM available now (capped by CLAWRL_TRAINER_RAM_LIMIT), and
 * the context and rank in this data dir's settings (the app's defaults when none are saved).
 */
function trainingFacts(dataDir: string): { hostBytes: number; maxContext: number; rank: number } {
  let hostBytes: number;
  try {
    hostBytes = hostAvailableBytes();
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  let settings = SettingsSchema.parse({});
  try {
    const saved = (JSON.parse(fs.readFileSync(dataPaths(dataDir).state, "utf8")) as { settings?: unknown }).settings;
    const r = SettingsSchema.safeParse(saved ?? {});
    if (r.success) settings = r.data;
  } catch {
    // no state yet (or unreadable): the defaults
  }
  return { hostBytes, maxContext: settings.maxTrainContext ?? APP_TRAIN_CONTEXT, rank: settings.loraRank };
}

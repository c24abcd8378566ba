import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError, UsageError, stringOpt, type CommandSpec } from "../command.js";
import { dataPaths, defaultDataDir } from "../../config/paths.js";
import { loadCatalog, recommendModel } from "../../../../models/catalog.js";
import { fmtBytes } from "../../../../models/downloader.js";
import { progressLine } from "../progressLine.js";
import { resolveModelSource } from "../../../../models/hfSource.js";
import { pullModel } from "../../../../models/pull.js";
import { ModelRegistry } from "../../../../models/registry.js";

const ACTIONS = ["list", "pull", "import", "use", "remove"] as const;

export const models: CommandSpec = {
  name: "models",
  usage: "list | pull <id|hf:owner/repo/file.gguf> | import <file> | use <id|file> | remove <id>  [--data-dir DIR]",
  summary: "Manage models: the recommended catalog, downloads (resumable, checksum-verified), local imports, the active model.",
  options: {
    "data-dir": { type: "string", value: "DIR", description: "the app's data dir (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  positionals: { min: 1, max: 2, names: "an action (list, pull, import, use, remove)" },
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
          const rec = recommendModel({ ramBytes: os.totalmem(), vramBytes: 0 });
          console.log("Installed:");
          if (installed.length === 0) console.log("  (none: 'clawrl models pull <id>' or 'clawrl models import <file>')");
          for (const m of installed) {
            console.log(`  ${m.id === active?.id ? "*" : " "} ${m.id.padEnd(28)} ${m.architecture.padEnd(7)} ${fmtBytes(m.sizeBytes).padStart(9)}  ${m.trainable ? "trainable" : "serve-only"}  ${m.path}`);
          }
          console.log("\nCatalog:");
          for (const c of loadCatalog()) {
            const mark = c.id === rec.entry.id ? " (recommended)" : "";
            console.log(`  ${c.id.padEnd(24)} ${c.architecture.padEnd(6)} ${c.quantization.padEnd(7)} ${fmtBytes(c.sizeBytes).padStart(9)}  ctx ${String(c.contextLength).padStart(6)}  train ≈${fmtBytes(c.trainMemoryBytes)}${mark}`);
          }
          console.log(`\nRecommended for this machine: ${rec.entry.id}. ${rec.reason}`);
          return 0;
        }
        case "pull": {
          const ac = new AbortController();
          process.once("SIGINT", () => ac.abort());
          const source = resolveModelSource(target!);
          console.error(`Downloading ${source.repo}/${source.file}…`);
          const m = await pullModel(registry, target!, { onProgress: progressLine("Downloading"), signal: ac.signal });
          if (process.stderr.isTTY) process.stderr.write("\n");
          console.log(`Downloaded ${m.id} to ${m.path} (${fmtBytes(m.sizeBytes)}, sha256 ${m.sha256})`);
          if (!m.trainable) console.log(`Note: architecture '${m.architecture}' can be served but not trained (the trainer supports llama, qwen2, qwen3).`);
          return 0;
        }
        case "import": {
          const m = registry.importFile(target!);
          console.log(`Imported ${m.id} (${m.architecture}, ${fmtBytes(m.sizeBytes)}) from ${m.path}`);
          if (!m.trainable) console.log(`Serve-only: the trainer does not support architecture '${m.architecture}' (it supports llama, qwen2, qwen3).`);
          return 0;
        }
        case "use": {
          const m = registry.get(target!) ?? (fs.existsSync(target!) ? registry.importFile(target!) : undefined);
          if (!m) throw new CliError(`no installed model '${target}' and no such file (see 'clawrl models list')`);
          registry.setActive(m.id);
          console.log(`Active model: ${m.id} (${m.path})`);
          return 0;
        }
        case "remove": {
          const m = registry.remove(target!);
          console.log(`Removed ${m.id}${m.origin === "import" ? " from the list (the imported file was left in place)" : ` and deleted ${m.path}`}`);
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

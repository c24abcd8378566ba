import path from "node:path";
import { CliError, intOpt, stringOpt, UsageError, type CommandSpec } from "../command.js";
import { LOAD_BACKENDS, parseLoadFlags, type ModelLoadPatch } from "../../api/modelLoad.js";
import { describeSkips } from "../../inference/backendProbe.js";
import { startCore } from "../../core.js";
import { shutdownCore } from "../../shutdown.js";
import { dataPaths, defaultDataDir } from "../../config/paths.js";
import { resolveModelArg } from "../../models/resolveModel.js";
import { localMachineFacts, recommendModel } from "../../../../models/catalog.js";
import { progressLine } from "../progressLine.js";
import { ModelRegistry } from "../../../../models/registry.js";

export const serve: CommandSpec = {
  name: "serve",
  usage:
    "[--model FILE|ID] [--port N] [--host ADDR] [--token T] [--data-dir DIR] [--gpu auto|cpu|vulkan|cuda|metal] [--context N] [--threads N] [--gpu-layers N|auto|max]",
  summary: "Start the headless core: the OpenAI-compatible API, the app API and the UI, on 127.0.0.1.",
  options: {
    model: {
      type: "string",
      value: "FILE|ID",
      description: "GGUF file, installed model id, or catalog id (downloaded first) to serve; default: the model chosen with 'clawrl models use'",
    },
    port: { type: "string", value: "N", description: "port to listen on (default 8765; 0 = any free port)" },
    host: { type: "string", value: "ADDR", description: "address to bind (default 127.0.0.1)" },
    token: { type: "string", value: "T", description: "bearer token to require (default: generated once, kept in the data dir)" },
    "data-dir": { type: "string", value: "DIR", description: "where state, logs and checkpoints live (default: $CLAWRL_HOME or the platform's app-data dir)" },
    gpu: {
      type: "string",
      value: LOAD_BACKENDS.join("|"),
      description:
        "inference backend (default: the model's load settings, else the Settings choice; auto = CUDA, then Vulkan, then CPU, or Metal on a Mac); a GPU backend is proven by a short evaluation in a child process first and falls back to the CPU when it is missing, crashes, hangs or computes NaN",
    },
    context: {
      type: "string",
      value: "N",
      description: "largest context in tokens (default: the model's load settings, else its trained context fitted to memory)",
    },
    threads: {
      type: "string",
      value: "N",
      description: "CPU threads per evaluation (default: the model's load settings, else $CLAWRL_THREADS, else one for a tiny model, else all math cores)",
    },
    "gpu-layers": {
      type: "string",
      value: "N|auto|max",
      description: "layers offloaded to the GPU (default: the model's load settings, else auto: as many as fit)",
    },
  },
  async run(args) {
    const modelArg = stringOpt(args, "model");
    const token = stringOpt(args, "token");
    if (token !== undefined && !/^[\x21-\x7e]{8,}$/.test(token)) throw new CliError("--token must be at least 8 printable characters without spaces");
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    // The same schema as the Models page's load settings (api/modelLoad.ts): for this run, these win over the stored ones.
    let load: ModelLoadPatch;
    try {
      load = parseLoadFlags({
        gpu: stringOpt(args, "gpu"),
        context: stringOpt(args, "context"),
        threads: stringOpt(args, "threads"),
        "gpu-layers": stringOpt(args, "gpu-layers"),
      });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const { backend, contextSize: maxContextSize, threads, gpuLayers } = load;
    let model: string | null;
    try {
      model = await resolveModelArg(new ModelRegistry(dataPaths(dataDir).models), modelArg, progressLine("Downloading model"));
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    if (!model) {
      const { catalogPlanner } = await import("../../../../models/trainability.js");
      const rec = recommendModel({ ...localMachineFacts(), planTraining: catalogPlanner() });
      console.log(
        `No model chosen yet: pick one on the UI's Models page, or run 'clawrl models pull ${rec.entry.id}' (recommended here) or 'clawrl models import FILE'.`,
      );
    } else {
      console.log(`Loading ${model}…`);
    }
    const core = await startCore({
      model: model ?? undefined,
      port: intOpt(args, "port", 0, 65535) ?? 8765,
      host: stringOpt(args, "host"),
      token,
      dataDir,
      engine: { backend: backend ?? undefined, maxContextSize: maxContextSize ?? undefined, threads: threads ?? undefined, gpuLayers: gpuLayers ?? undefined },
    });
    if (core.engine) {
      const i = core.engine.info();
      const where = i.backend === "cpu" ? "cpu" : `${i.backend}${i.devices.length > 0 ? ` on ${i.devices.join(", ")}` : ""}, ${i.gpuLayers} layers offloaded`;
      console.log(`Backend:   ${where}, context ${i.contextSize}, ${i.threads} thread${i.threads === 1 ? "" : "s"}`);
      if (i.backendSkipped.length > 0) console.log(`Skipped:   ${describeSkips(i.backendSkipped)}`);
    }
    console.log(`ClawRL core listening on ${core.url}`);
    console.log(`API base:  ${core.url}/v1`);
    console.log(`Token:     ${core.token}`);
    console.log(`Open UI:   ${core.url}/#token=${core.token}`);
    console.log(`Data dir:  ${core.paths.root}`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    console.log("Shutting down… (press Ctrl-C again to force)");
    process.once("SIGINT", () => process.exit(130));
    await shutdownCore(core, { drainMs: 5000 });
    return 0;
  },
};

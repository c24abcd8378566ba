import path from "node:path";
import { choiceOpt, CliError, intOpt, stringOpt, UsageError, type CommandSpec } from "../command.js";
import { BACKEND_PREFERENCES } from "../../inference/backend.js";
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
    "[--model FILE|ID] [--port N] [--host ADDR] [--token T] [--data-dir DIR] [--gpu auto|cuda|vulkan|cpu] [--context N] [--threads N] [--gpu-layers N|auto|max]",
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
      value: "auto|cuda|vulkan|cpu",
      description:
        "inference backend (default: the Settings choice, auto = CUDA, then Vulkan, then CPU); a GPU backend is proven by a short evaluation in a child process first and falls back to the CPU when it is missing, crashes, hangs or computes NaN",
    },
    context: { type: "string", value: "N", description: "largest context in tokens (default: the model's trained context, fitted to memory)" },
    threads: {
      type: "string",
      value: "N",
      description: "CPU threads per evaluation (default: $CLAWRL_THREADS, else one for a tiny model, else all math cores)",
    },
    "gpu-layers": { type: "string", value: "N|auto|max", description: "layers offloaded to the GPU (default auto: as many as fit)" },
  },
  async run(args) {
    const modelArg = stringOpt(args, "model");
    const token = stringOpt(args, "token");
    if (token !== undefined && !/^[\x21-\x7e]{8,}$/.test(token)) throw new CliError("--token must be at least 8 printable characters without spaces");
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    const backend = choiceOpt(args, "gpu", BACKEND_PREFERENCES);
    const maxContextSize = intOpt(args, "context", 16, 16_777_216);
    const threads = intOpt(args, "threads", 1, 1024);
    const layersArg = stringOpt(args, "gpu-layers");
    let gpuLayers: "auto" | "max" | number | undefined;
    if (layersArg === "auto" || layersArg === "max") gpuLayers = layersArg;
    else if (layersArg !== undefined) {
      if (!/^\d+$/.test(layersArg) || Number(layersArg) > 100_000)
        throw new UsageError(`--gpu-layers must be auto, max or a number of layers, got '${layersArg}'`);
      gpuLayers = Number(layersArg);
    }
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
      engine: { backend, maxContextSize, threads, gpuLayers },
    });
    if (core.engine) {
      const i = core.engine.info();
      const where = i.backend === "cpu" ? "cpu" : `${i.backend}${i.devices.length > 0 ? ` on ${i.devices.join(", ")}` : ""}, ${i.gpuLayers} layers offloaded`;
      console.log(`Backend:   ${where}, context ${i.contextSize}`);
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

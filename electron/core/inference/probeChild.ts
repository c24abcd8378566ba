/**
 * The backend probe's child process (backendProbe.ts forks it): loads llama.cpp's prebuilt
 * binary for one GPU backend, loads the model on it and runs a short real evaluation, a batch
 * (the prompt) and then a single token, since GPUs run the two through different kernels. It
 * reports the logits' health to the parent; the parent judges. Whatever goes wrong in here
 * (a GPU kernel that cannot run aborts the whole process: node-llama-cpp's CUDA binary on a
 * driver that cannot JIT its PTX) takes down this process, never the core.
 *
 * Protocol: the parent sends one ProbeRequest; the child answers ProbeMessage lines over IPC
 * ("loaded" after the model is on the device, then "result" or "unavailable") and exits.
 */
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";

export interface ProbeRequest {
  /** The core never probes "cpu" (its last resort); tests do, to run this code without a GPU. */
  backend: "cuda" | "vulkan" | "metal" | "cpu";
  modelPath: string;
  gpuLayers: "auto" | "max" | number;
}

export type ProbeMessage =
  | { type: "unavailable"; reason: string }
  | { type: "loaded"; backend: string; gpuLayers: number; devices: string[] }
  | { type: "result"; evaluations: Array<{ tokens: number; logits: number; nonFinite: number }>; ms: number };

const PROBE_TEXT = "The probe checks that this backend computes the model's logits.";

function send(msg: ProbeMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(msg)}\n`);
      resolve();
    } else process.send(msg, undefined, {}, () => resolve());
  });
}

function health(logits: ReadonlyMap<Token, number> | undefined, tokens: number): { tokens: number; logits: number; nonFinite: number } {
  let nonFinite = 0;
  let n = 0;
  for (const v of logits?.values() ?? []) {
    n++;
    if (!Number.isFinite(v)) nonFinite++;
  }
  return { tokens, logits: n, nonFinite };
}

async function probe(req: ProbeRequest): Promise<void> {
  let llama;
  try {
    llama = await getLlama({
      gpu: req.backend === "cpu" ? false : req.backend,
      build: "never",
      skipDownload: true,
      progressLogs: false,
      logLevel: LlamaLogLevel.error,
    });
  } catch (err) {
    const e = err as Error;
    const message = (e.message || e.name || String(err)).split("\n")[0];
    await send({ type: "unavailable", reason: `no prebuilt ${req.backend} binary loads here (${message})` });
    return;
  }
  if ((llama.gpu === false ? "cpu" : llama.gpu) !== req.backend) {
    await send({ type: "unavailable", reason: `asked for ${req.backend}, llama.cpp loaded ${llama.gpu === false ? "cpu" : llama.gpu}` });
    return;
  }
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: req.modelPath, gpuLayers: req.gpuLayers });
  await send({ type: "loaded", backend: req.backend, gpuLayers: model.gpuLayers, devices: await llama.getGpuDeviceNames().catch(() => []) });
  const context = await model.createContext({ contextSize: Math.min(256, model.trainContextSize), sequences: 1 });
  const seq = context.getSequence();
  let prompt = model.tokenize(PROBE_TEXT);
  if (prompt.length < 2) prompt = [...(model.tokens.bos !== null ? [model.tokens.bos] : []), ...prompt, ...prompt];
  const last = prompt.length - 1;
  const batch = await seq.controlledEvaluate(prompt.map((t, i) => (i === last ? [t, { generateNext: { logits: true, token: true } }] : t)));
  const first = batch[last]?.next;
  const evaluations = [health(first?.logits, prompt.length)];
  const next = first?.token ?? prompt[0];
  const single = await seq.controlledEvaluate([[next, { generateNext: { logits: true } }]]);
  evaluations.push(health(single[0]?.next.logits, 1));
  await send({ type: "result", evaluations, ms: Math.round(performance.now() - t0) });
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

process.once("message", (req: ProbeRequest) => {
  probe(req).then(
    () => process.exit(0),
    (err: unknown) => {
      // A JS-level failure (model did not load, evaluation threw): the parent reads stderr.
      process.stderr.write(`probe failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(3);
    },
  );
});

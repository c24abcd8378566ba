/**
 * Doctor's inference probe, a child process (probeRunner.ts forks it): loads node-llama-cpp's
 * prebuilt binary for one backend, reports the devices it sees, then for each model loads it
 * (every layer offloaded on a GPU backend), evaluates a prompt and decodes a few tokens, and
 * reports prompt and decode tokens/s, layers offloaded and memory used. A GPU binary that
 * aborts the process at the first kernel (see inference/backendProbe.ts) ends this child only.
 */
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { capCpuThreads, defaultThreads } from "../../inference/threads.js";
import { probeMain } from "../../../../common/probeChild.js";
import type { InferenceRun } from "../../api/doctorReport.js";
import { llamaProbeRequestSchema, type LlamaProbeResult } from "./contracts.js";

const TEXT = "The doctor measures how fast this machine reads a prompt and writes an answer with the model. ";

probeMain(llamaProbeRequestSchema, async (req, progress) => {
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
    return { type: "unavailable", reason: `no prebuilt ${req.backend} binary loads here (${(e.message || e.name || String(err)).split("\n")[0]})` };
  }
  const got = llama.gpu === false ? "cpu" : llama.gpu;
  if (got !== req.backend) return { type: "unavailable", reason: `asked for ${req.backend}, llama.cpp loaded ${got}` };
  if (req.backend === "cpu") capCpuThreads(llama);
  const devices = req.backend === "cpu" ? [] : await llama.getGpuDeviceNames().catch(() => []);
  const vram0 = req.backend === "cpu" ? null : await llama.getVramState().catch(() => null);
  await progress(`${req.backend}: ${devices.length > 0 ? devices.join(", ") : "binary loaded"}`);
  const runs: InferenceRun[] = [];
  for (const m of req.models) {
    const t0 = performance.now();
    const model = await llama.loadModel({ modelPath: m.path, gpuLayers: req.backend === "cpu" ? 0 : "max" });
    const loadSeconds = (performance.now() - t0) / 1000;
    const vram1 = vram0 ? await llama.getVramState().catch(() => null) : null;
    const context = await model.createContext({
      contextSize: Math.min(model.trainContextSize, 2 ** Math.ceil(Math.log2(req.promptTokens + req.decodeTokens + 8))),
      sequences: 1,
      threads: defaultThreads(model.size),
    }); // as the engine does: one thread for a small model
    const seq = context.getSequence();
    let prompt: Token[] = [];
    while (prompt.length < req.promptTokens) prompt = [...prompt, ...model.tokenize(TEXT)];
    prompt = prompt.slice(0, req.promptTokens);
    if (req.backend !== "cpu") {
      // A GPU backend builds its kernels at their first use (llama.cpp's Vulkan pipelines): on an
      // H100 the first model's prompt read 32 tok/s and the next one's 15 000 without this
      // untimed pass over the same prompt and two decoded tokens (docs/hardware/h100.md).
      await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
      let w = 0;
      for await (const token of seq.evaluate(prompt.slice(-1))) {
        void token;
        if (++w >= 2) break;
      }
      await seq.clearHistory();
    }
    // Prompt: all but the last token in batches, as the server does before the first sampled token.
    let t = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
    const promptSeconds = (performance.now() - t) / 1000;
    // Decode: each token one evaluation (the last prompt token is the first).
    t = performance.now();
    let n = 0;
    for await (const token of seq.evaluate(prompt.slice(-1))) {
      void token;
      if (++n >= req.decodeTokens) break;
    }
    const decodeSeconds = (performance.now() - t) / 1000;
    runs.push({
      model: m.label,
      modelBytes: model.size,
      loadSeconds,
      promptTokens: prompt.length - 1,
      promptTokensPerSecond: (prompt.length - 1) / promptSeconds,
      decodeTokens: n,
      decodeTokensPerSecond: n / decodeSeconds,
      gpuLayers: model.gpuLayers,
      totalLayers: model.fileInsights.totalLayers ?? null,
      vramUsedBytes: vram0 && vram1 ? Math.max(0, vram1.used - vram0.used) : null,
      rssBytes: process.memoryUsage().rss,
      threads: context.currentThreads ?? null,
    });
    await progress(
      `${req.backend}: ${m.label} prompt ${runs.at(-1)!.promptTokensPerSecond.toFixed(1)} tok/s, decode ${runs.at(-1)!.decodeTokensPerSecond.toFixed(1)} tok/s`,
    );
    await context.dispose();
    await model.dispose();
  }
  return { type: "result", data: { devices, vramTotalBytes: vram0?.total ?? null, runs } satisfies LlamaProbeResult };
});

import OpenAI from "openai";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import type { EngineOptions } from "../../electron/core/inference/engine.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";

/** A real core serving the tiny qwen2 model (ChatML template with tools), one CPU thread. */
export async function startTinyCore(engine: Omit<EngineOptions, "modelPath"> = {}, extra: { bodyLimit?: number } = {}) {
  const model = await tinyModel({ arch: "qwen2" });
  const core: RunningCore = await startCore({
    model,
    dataDir: tempDir("clawrl-openai-"),
    token: "test-token-123",
    uiDir: "",
    engine: { maxContextSize: 1024, sequences: 4, threads: 1, backend: "cpu", ...engine },
    ...extra,
  });
  const client = new OpenAI({ baseURL: `${core.url}/v1`, apiKey: core.token, maxRetries: 0, timeout: 120_000 });
  return { core, client, modelId: core.engine!.modelId };
}

export function turnCount(core: RunningCore): number {
  return [...core.store.turnEntries()].length;
}

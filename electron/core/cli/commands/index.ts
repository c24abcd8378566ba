import type { CommandSpec } from "../command.js";

/**
 * Every `clawrl` subcommand, loaded lazily so `clawrl --help` and light commands do not pay
 * for node-llama-cpp or tfjs. Add one line per new command.
 */
export const commands: Record<string, { summary: string; load: () => Promise<CommandSpec> }> = {
  serve: { summary: "start the headless core (API + UI) and print its URL and token", load: async () => (await import("./serve.js")).serve },
  "tiny-model": { summary: "write a deterministic tiny GGUF test model", load: async () => (await import("./tinyModel.js")).tinyModel },
  models: { summary: "list, download, import and choose models", load: async () => (await import("./models.js")).models },
  inspect: { summary: "describe a GGUF model or LoRA adapter", load: async () => (await import("./inspect.js")).inspect },
  adapters: {
    summary: "list checkpoints; export one as llama.cpp GGUF, Ollama or PEFT; import a PEFT or GGUF LoRA through the publish gate",
    load: async () => (await import("./adapters.js")).adapters,
  },
  export: {
    summary: "write all recorded trajectories (turns, feedback, votes, rewards, hints) as JSONL",
    load: async () => (await import("./export.js")).exportCommand,
  },
  sessions: {
    summary: "list the recorded chats; export one as Markdown (the branch shown) or JSON (the whole tree)",
    load: async () => (await import("./sessions.js")).sessions,
  },
  train: { summary: "train a LoRA adapter offline from JSONL samples (binary, opd, combined, topk)", load: async () => (await import("./train.js")).train },
  doctor: {
    summary: "measure what this machine can do: GPUs, inference and trainer backends (each in a child process), what serves and learns here",
    load: async () => (await import("./doctor.js")).doctor,
  },
  mcp: { summary: "list the MCP servers of mcp.json: start each, print its status and tools", load: async () => (await import("./mcp.js")).mcp },
  eval: {
    summary: "score a personalization scenario: baseline vs learning methods, before/after with CI, report.json + chart.svg",
    load: async () => (await import("./eval.js")).evalCommand,
  },
};

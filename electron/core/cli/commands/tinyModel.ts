import { CliError, type CommandSpec } from "../command.js";

export const tinyModel: CommandSpec = {
  name: "tiny-model",
  usage: "--arch llama|qwen2|qwen3 --out FILE [--seed N] [--layers N] [--dim N] [--type f32|f16|q8_0|q4_k]",
  summary: "Write a deterministic tiny GGUF model for tests.",
  options: {},
  async run() {
    throw new CliError("not implemented yet");
  },
};

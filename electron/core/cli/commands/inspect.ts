import { CliError, type CommandSpec } from "../command.js";

export const inspect: CommandSpec = {
  name: "inspect",
  usage: "FILE",
  summary: "Describe a GGUF model or LoRA adapter.",
  options: {},
  positionals: { min: 1, max: 1, names: "FILE" },
  async run() {
    throw new CliError("not implemented yet");
  },
};

import fs from "node:fs";
import path from "node:path";
import { CliError, choiceOpt, requiredString, stringOpt, type CommandSpec } from "../command.js";
import { defaultDataDir } from "../../config/paths.js";
import { exportTrajectories } from "../../store/export.js";
import { DATASET_FORMATS, exportDataset } from "../../store/datasets.js";
import { Store } from "../../store/store.js";

export const exportCommand: CommandSpec = {
  name: "export",
  usage: "--out FILE [--format jsonl|kto|dpo] [--only chat|completion] [--data-dir DIR]",
  summary:
    "Write the recorded data as JSON Lines: every turn with its next state, feedback, judge votes, reward and hints (jsonl), " +
    'or a preference dataset in Hugging Face TRL\'s formats: kto ({"prompt", "completion", "label"} per liked/disliked answer) ' +
    'or dpo ({"prompt", "chosen", "rejected"} per liked and disliked answer to the same prompt).',
  options: {
    out: { type: "string", value: "FILE", description: "the JSONL file to write (replaced whole, never half-written)" },
    format: {
      type: "string",
      value: "NAME",
      description: "jsonl (default: every turn, as recorded), kto or dpo (TRL datasets; labels from thumbs, else the judge)",
    },
    only: { type: "string", value: "KIND", description: "kto/dpo: only chat turns (conversational messages) or only plain-text completion turns (strings)" },
    "data-dir": { type: "string", value: "DIR", description: "data dir to read (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  async run(args) {
    const out = path.resolve(requiredString(args, "out"));
    const format = choiceOpt(args, "format", DATASET_FORMATS) ?? "jsonl";
    const only = choiceOpt(args, "only", ["chat", "completion"] as const);
    if (only && format === "jsonl") throw new CliError("--only applies to --format kto or dpo");
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    if (!fs.existsSync(dataDir)) throw new CliError(`data dir not found: ${dataDir}`);
    if (!fs.existsSync(path.dirname(out))) throw new CliError(`output directory not found: ${path.dirname(out)}`);
    if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new CliError(`--out is a directory: ${out}`);
    // Read-only: the app may be running and appending; a torn tail is skipped, not cut.
    const store = Store.open(dataDir, { readOnly: true });
    try {
      if (store.recoveryMessage) console.error(store.recoveryMessage);
      if (format === "jsonl") {
        const s = exportTrajectories(store, out);
        console.log(`exported ${s.turns} turn(s) from ${s.sessions} session(s) to ${out}`);
        return 0;
      }
      const s = exportDataset(store, format, out, { only });
      const what =
        format === "kto"
          ? `${s.examples} KTO example(s) (${s.liked} liked, ${s.disliked} disliked)`
          : `${s.examples} DPO pair(s) from ${s.liked} liked and ${s.disliked} disliked answer(s) to ${s.prompts} prompt(s)`;
      console.log(`exported ${what} to ${out}${s.unlabeled ? `; ${s.unlabeled} main turn(s) without a ±1 reward left out` : ""}`);
      if (s.kinds.length > 1) {
        console.error(
          "note: the file mixes chat turns (conversational messages) and plain-text completion turns (strings); a Hugging Face dataset takes one kind per file: pass --only chat or --only completion",
        );
      }
      if (format === "dpo" && s.examples === 0 && s.liked + s.disliked > 0) {
        console.error("note: no prompt has both a liked and a disliked answer, so there are no DPO pairs; --format kto uses every labeled answer");
      }
    } finally {
      store.close();
    }
    return 0;
  },
};

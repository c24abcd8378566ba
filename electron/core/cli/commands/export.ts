import fs from "node:fs";
import path from "node:path";
import { CliError, requiredString, stringOpt, type CommandSpec } from "../command.js";
import { defaultDataDir } from "../../config/paths.js";
import { exportTrajectories } from "../../store/export.js";
import { Store } from "../../store/store.js";

export const exportCommand: CommandSpec = {
  name: "export",
  usage: "--out FILE [--data-dir DIR]",
  summary: "Write every recorded turn with its next state, feedback, judge votes, reward and hints as JSON Lines.",
  options: {
    out: { type: "string", value: "FILE", description: "the JSONL file to write (replaced whole, never half-written)" },
    "data-dir": { type: "string", value: "DIR", description: "data dir to read (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  async run(args) {
    const out = path.resolve(requiredString(args, "out"));
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    if (!fs.existsSync(dataDir)) throw new CliError(`data dir not found: ${dataDir}`);
    if (!fs.existsSync(path.dirname(out))) throw new CliError(`output directory not found: ${path.dirname(out)}`);
    if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new CliError(`--out is a directory: ${out}`);
    // Read-only: the app may be running and appending; a torn tail is skipped, not cut.
    const store = Store.open(dataDir, { readOnly: true });
    try {
      if (store.recoveryMessage) console.error(store.recoveryMessage);
      const s = exportTrajectories(store, out);
      console.log(`exported ${s.turns} turn(s) from ${s.sessions} session(s) to ${out}`);
    } finally {
      store.close();
    }
    return 0;
  },
};

import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../../../common/fs/atomicFile.js";
import { CliError, choiceOpt, stringOpt, UsageError, type CommandSpec } from "../command.js";
import { defaultDataDir } from "../../config/paths.js";
import { SESSION_EXPORT_FORMATS, sessionExport, sessionMarkdown } from "../../store/sessionExport.js";
import { Store } from "../../store/store.js";

const ACTIONS = ["list", "export"] as const;

export const sessions: CommandSpec = {
  name: "sessions",
  usage: "list [--json] | export ID --format md|json [--out FILE] [--data-dir DIR]",
  summary:
    "List the recorded chats (newest first: id, last activity, turns, title), or export one: as Markdown (the branch shown, " +
    "readable, tool calls and attached files named, the adapter of each answer) or as JSON (the whole tree, feedback, adapters).",
  options: {
    json: { type: "boolean", description: "list: print the sessions as JSON (GET /api/sessions's reply)" },
    format: { type: "string", value: "md|json", description: "export: Markdown or JSON (default md)" },
    out: { type: "string", value: "FILE", description: "export: write to FILE (replaced whole, never half-written) instead of printing it" },
    "data-dir": { type: "string", value: "DIR", description: "data dir to read (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  positionals: { min: 1, max: 2, names: "an action (list, export)" },
  async run(args) {
    const [action, id] = args.positionals;
    if (!(ACTIONS as readonly string[]).includes(action)) throw new UsageError(`unknown action '${action}' (one of ${ACTIONS.join(", ")})`);
    const dataDir = path.resolve(stringOpt(args, "data-dir") ?? defaultDataDir());
    if (action === "list") {
      if (id) throw new UsageError("'sessions list' takes no argument");
      if (args.values.format !== undefined || args.values.out !== undefined) throw new UsageError("--format and --out apply to 'sessions export'");
      return withStore(dataDir, (store) => list(store, args.values.json === true));
    }
    if (!id) throw new UsageError("'sessions export' needs a session id ('clawrl sessions list' shows them)");
    if (args.values.json !== undefined) throw new UsageError("--json applies to 'sessions list'; use --format json");
    const format = choiceOpt(args, "format", SESSION_EXPORT_FORMATS) ?? "md";
    const outOpt = stringOpt(args, "out");
    const out = outOpt ? path.resolve(outOpt) : null;
    if (out && !fs.existsSync(path.dirname(out))) throw new CliError(`output directory not found: ${path.dirname(out)}`);
    if (out && fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new CliError(`--out is a directory: ${out}`);
    return withStore(dataDir, (store) => {
      const exp = sessionExport(store, id);
      if (!exp) throw new CliError(`no session '${id}' in ${dataDir} ('clawrl sessions list' shows them)`);
      const text = format === "json" ? `${JSON.stringify(exp, null, 2)}\n` : sessionMarkdown(exp);
      if (!out) process.stdout.write(text);
      else {
        writeFileAtomicSync(out, text);
        console.error(`exported session ${id} (${exp.turns.length} turn(s), ${exp.activePath.length} on the branch shown) to ${out}`);
      }
      return 0;
    });
  },
};

/** Read-only: the app may be running and appending; a torn tail is skipped, not cut. */
function withStore(dataDir: string, fn: (store: Store) => number): number {
  if (!fs.existsSync(dataDir)) throw new CliError(`data dir not found: ${dataDir}`);
  const store = Store.open(dataDir, { readOnly: true });
  try {
    if (store.recoveryMessage) console.error(store.recoveryMessage);
    return fn(store);
  } finally {
    store.close();
  }
}

function list(store: Store, json: boolean): number {
  const all = store.sessions();
  if (json) {
    console.log(JSON.stringify({ sessions: all }, null, 2));
    return 0;
  }
  if (all.length === 0) console.log("No chats recorded yet.");
  for (const s of all) {
    const turns = `${s.mainTurnCount} turn${s.mainTurnCount === 1 ? "" : "s"}`;
    console.log(`${s.id}  ${s.lastActivityAt}  ${turns.padEnd(9)}  ${s.source === "ui" ? "chat " : "outside"}  ${s.title ?? "(untitled)"}`);
  }
  return 0;
}

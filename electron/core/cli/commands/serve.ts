import fs from "node:fs";
import path from "node:path";
import { CliError, intOpt, stringOpt, type CommandSpec } from "../command.js";
import { startCore } from "../../core.js";

export const serve: CommandSpec = {
  name: "serve",
  usage: "[--model FILE] [--port N] [--host ADDR] [--token T] [--data-dir DIR]",
  summary: "Start the headless core: the OpenAI-compatible API, the app API and the UI, on 127.0.0.1.",
  options: {
    model: { type: "string", value: "FILE", description: "GGUF model to serve" },
    port: { type: "string", value: "N", description: "port to listen on (default 8765; 0 = any free port)" },
    host: { type: "string", value: "ADDR", description: "address to bind (default 127.0.0.1)" },
    token: { type: "string", value: "T", description: "bearer token to require (default: generated once, kept in the data dir)" },
    "data-dir": { type: "string", value: "DIR", description: "where state, logs and checkpoints live (default: $CLAWRL_HOME or the platform's app-data dir)" },
  },
  async run(args) {
    const model = stringOpt(args, "model");
    if (model !== undefined && !fs.existsSync(model)) throw new CliError(`model file not found: ${model}`);
    const token = stringOpt(args, "token");
    if (token !== undefined && !/^[\x21-\x7e]{8,}$/.test(token)) throw new CliError("--token must be at least 8 printable characters without spaces");
    const dataDir = stringOpt(args, "data-dir");
    const core = await startCore({
      model: model && path.resolve(model),
      port: intOpt(args, "port", 0, 65535) ?? 8765,
      host: stringOpt(args, "host"),
      token,
      dataDir: dataDir && path.resolve(dataDir),
    });
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
    console.log("Shutting down…");
    await core.close();
    return 0;
  },
};

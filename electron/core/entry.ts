// The core's process entry when Electron main starts it (bundled to out/main/core.js, run as
// plain Node through ELECTRON_RUN_AS_NODE). Reads its configuration from argv/env, starts the
// core, reports {url, token} to the parent over IPC (or a stdout line without IPC), and shuts
// down gracefully on the parent's request, on SIGTERM/SIGINT, or when the parent goes away.
import fs from "node:fs";
import { parseArgs } from "node:util";
import path from "node:path";
import { startCore, type CoreOptions, type RunningCore } from "./core.js";
import { dataPaths, defaultDataDir } from "./config/paths.js";
import { ModelRegistry } from "../../models/registry.js";
import { shutdownCore } from "./shutdown.js";
import { coreEnv, readyLinePrefix, type CoreToMain, type MainToCore } from "../shared/coreMessages.js";

export interface EntryConfig {
  core: CoreOptions;
  /** How long in-flight requests may run on after shutdown begins before their sockets close. */
  drainMs: number;
}

/** argv flags win over env; bad values are one-line errors. */
export function entryConfigFrom(argv: string[], env: NodeJS.ProcessEnv): EntryConfig {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      "data-dir": { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      model: { type: "string" },
      "ui-dir": { type: "string" },
      "drain-ms": { type: "string" },
    },
  });
  const pick = (flag: keyof typeof values, name: string) => {
    const v = values[flag] ?? env[name];
    return v === undefined || v === "" ? undefined : String(v);
  };
  const int = (flag: keyof typeof values, name: string, max: number): number | undefined => {
    const raw = pick(flag, name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n > max) throw new Error(`${flag} must be an integer from 0 to ${max}, got ${JSON.stringify(raw)}`);
    return n;
  };
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(p));
  return {
    core: {
      dataDir: abs(pick("data-dir", coreEnv.dataDir)),
      port: int("port", coreEnv.port, 65535) ?? 0,
      host: pick("host", coreEnv.host),
      model: abs(pick("model", coreEnv.model)),
      uiDir: abs(pick("ui-dir", coreEnv.uiDir)),
    },
    drainMs: int("drain-ms", coreEnv.drainMs, 600_000) ?? 5000,
  };
}

/** Resolves once the message is handed to the channel, so exiting right after cannot lose it. */
function report(msg: CoreToMain): Promise<void> {
  return new Promise((resolve) => {
    if (process.send && process.connected) process.send(msg, undefined, {}, () => resolve());
    else {
      if (msg.type === "ready") process.stdout.write(`${readyLinePrefix}${JSON.stringify(msg)}\n`);
      resolve();
    }
  });
}

export async function runEntry(argv = process.argv.slice(2), env = process.env): Promise<void> {
  let config: EntryConfig;
  let core: RunningCore;
  try {
    config = entryConfigFrom(argv, env);
    core = await startWithChosenModel(config.core, env);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(`clawrl core: start failed: ${message}`);
    await report({ type: "failed", message });
    process.exit(1);
  }

  let stopping = false;
  const shutdown = (why: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`clawrl core: shutting down (${why})`);
    shutdownCore(core, { drainMs: config.drainMs }).then(
      (drained) => {
        if (!drained) console.error("clawrl core: drain time ran out; open connections were closed");
        process.exit(0);
      },
      (err: unknown) => {
        console.error(`clawrl core: shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on("message", (msg: MainToCore) => {
    if (msg?.type === "shutdown") shutdown("asked by main");
  });
  // The parent died or closed the channel: nobody can reach us any more.
  process.on("disconnect", () => shutdown("parent disconnected"));
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));

  await report({ type: "ready", url: core.url, token: core.token, pid: process.pid, dataDir: core.paths.root });
}

/**
 * The model chosen on the Models page (or with `clawrl models use`) when none is given, as
 * `clawrl serve` does. A chosen model that is gone or does not load leaves the app without one
 * (it opens, says so, and the Models page offers the others) rather than not starting at all.
 */
export async function startWithChosenModel(opts: CoreOptions, env: NodeJS.ProcessEnv = process.env): Promise<RunningCore> {
  if (opts.model) return startCore(opts);
  const chosen = new ModelRegistry(dataPaths(opts.dataDir ?? defaultDataDir(env)).models).active();
  if (!chosen) return startCore(opts);
  if (!fs.existsSync(chosen.path)) {
    console.error(`clawrl core: the chosen model ${chosen.id} is gone (${chosen.path}); starting without a model`);
    return startCore(opts);
  }
  try {
    return await startCore({ ...opts, model: chosen.path });
  } catch (err) {
    console.error(`clawrl core: the chosen model ${chosen.id} did not load (${err instanceof Error ? err.message : String(err)}); starting without a model`);
    return startCore(opts);
  }
}

function isMainModule(): boolean {
  if (!process.argv[1]) return false;
  try {
    return fs.realpathSync(process.argv[1]) === fs.realpathSync(import.meta.filename);
  } catch {
    return false;
  }
}

// Run when executed (as entry.ts, or as the bundle out/main/core.js), not when a test imports it.
if (isMainModule()) void runEntry();

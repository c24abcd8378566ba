import fs from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { appRoot, dataPaths, defaultDataDir, type DataPaths } from "./config/paths.js";
import { createServer } from "./server/app.js";
import { loadOrCreateToken } from "./server/token.js";
import { registerApiRoutes } from "./server/routes/api.js";
import { Store } from "./store/store.js";
import { EventBus } from "./rollout/events.js";
import { Rollout } from "./rollout/rollout.js";

export interface CoreOptions {
  dataDir?: string;
  host?: string;
  /** 0 = any free port. */
  port?: number;
  token?: string;
  /** Path of a GGUF to serve. */
  model?: string;
  uiDir?: string;
}

export interface RunningCore {
  url: string;
  token: string;
  paths: DataPaths;
  server: FastifyInstance;
  /** state.json + logs/trajectories.jsonl */
  store: Store;
  /** in-process events (SSE, learning loop) */
  bus: EventBus;
  /** sessions and turns: the /v1 route calls beginTurn/completeTurn/abortTurn */
  rollout: Rollout;
  close(): Promise<void>;
}

export const defaultUiDir = path.join(appRoot, "out", "renderer");

/** Starts the headless core: the HTTP server with its routes. No electron import, ever. */
export async function startCore(opts: CoreOptions = {}): Promise<RunningCore> {
  const paths = dataPaths(opts.dataDir ?? defaultDataDir());
  fs.mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  const token = loadOrCreateToken(paths.token, opts.token);
  const store = Store.open(paths.root);
  if (store.recoveryMessage) console.warn(store.recoveryMessage);
  const bus = new EventBus();
  const rollout = new Rollout({ store, bus });
  rollout.start();
  const server = createServer({ token, uiDir: opts.uiDir ?? defaultUiDir });
  registerApiRoutes(server, { store, rollout, bus });
  const host = opts.host ?? "127.0.0.1";
  await server.listen({ host, port: opts.port ?? 0 });
  const addr = server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    token,
    paths,
    server,
    store,
    bus,
    rollout,
    close: async () => {
      await server.close();
      rollout.stop();
      store.close();
    },
  };
}

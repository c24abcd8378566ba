// What the preload exposes as `window.clawrl`: the core's address, its token, and a file-open
// dialog for importing a model. Nothing else crosses (no ipcRenderer, no Node). Built as a plain
// function so tests check the shape without Electron. No imports beyond shared types: the
// sandboxed preload bundle must stay self-contained.
import type { BridgeConfig } from "../shared/ipc.js";

export interface ClawrlBridge {
  readonly apiBase: string;
  readonly token: string;
  openModelFile(): Promise<string | null>;
}

/** Validates what main sent; a malformed config is an error, not a half-working window. */
export function parseBridgeConfig(value: unknown): BridgeConfig {
  const v = value as Partial<BridgeConfig> | null;
  if (!v || typeof v !== "object") throw new Error("clawrl preload: main sent no core config");
  if (typeof v.apiBase !== "string" || !/^https?:\/\/[^/\s]+$/.test(v.apiBase)) throw new Error("clawrl preload: apiBase must be an http origin");
  if (typeof v.token !== "string" || v.token.length < 8) throw new Error("clawrl preload: token missing");
  return { apiBase: v.apiBase, token: v.token };
}

/**
 * The bridge object. `invokeOpenModelFile` is the IPC call; its answer is checked so the page
 * only ever sees a string or null. The object is frozen: the page cannot swap members.
 */
export function createBridge(config: unknown, invokeOpenModelFile: () => Promise<unknown>): ClawrlBridge {
  const { apiBase, token } = parseBridgeConfig(config);
  return Object.freeze({
    apiBase,
    token,
    async openModelFile(): Promise<string | null> {
      const r = await invokeOpenModelFile();
      return typeof r === "string" && r.length > 0 ? r : null;
    },
  });
}

// Preload (sandboxed, context-isolated): hands the renderer `window.clawrl` = {apiBase, token,
// openModelFile()} and nothing else. Built as CommonJS: sandboxed preloads cannot be ES modules.
import { contextBridge, ipcRenderer } from "electron";
import { ipcChannels } from "../shared/ipc.js";
import { createBridge } from "./bridge.js";

// Synchronous so the bridge is complete before any page script runs.
const config: unknown = ipcRenderer.sendSync(ipcChannels.config);
contextBridge.exposeInMainWorld(
  "clawrl",
  createBridge(config, () => ipcRenderer.invoke(ipcChannels.openModelFile)),
);

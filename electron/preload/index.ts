// Preload: hands {apiBase, token} to the renderer through contextBridge. Filled in by the Electron shell issue.
import { contextBridge } from "electron";

contextBridge.exposeInMainWorld("clawrl", {});

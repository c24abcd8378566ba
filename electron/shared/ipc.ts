// IPC between the window (preload) and main. Only these two channels exist; main checks the
// sender before answering either.
export const ipcChannels = {
  /** Synchronous: {apiBase, token} of the running core. */
  config: "clawrl:config",
  /** invoke → the chosen GGUF's path, or null when cancelled. */
  openModelFile: "clawrl:open-model-file",
} as const;

export interface BridgeConfig {
  apiBase: string;
  token: string;
}

import { resolve } from "node:path";
import { defineConfig, externalizeDepsPlugin } from "electron-vite";
import react from "@vitejs/plugin-react";
import { assetsInlineLimit, manualChunks } from "./renderer/chunks";

export default defineConfig({
  main: {
    plugins: [externalizeDepsPlugin()],
    build: {
      rollupOptions: {
        input: {
          index: resolve(import.meta.dirname, "electron/main/index.ts"),
          // The core's process entry (plain Node; main forks it with ELECTRON_RUN_AS_NODE).
          core: resolve(import.meta.dirname, "electron/core/entry.ts"),
          // The trainer process the core forks (electron/core/training/workerClient.ts looks for it).
          "trainer-worker": resolve(import.meta.dirname, "trainer/worker.ts"),
          // The GPU backend probe the core forks before trusting a backend (electron/core/inference/backendProbe.ts looks for it).
          "backend-probe": resolve(import.meta.dirname, "electron/core/inference/probeChild.ts"),
        },
      },
    },
  },
  preload: {
    plugins: [externalizeDepsPlugin()],
    build: {
      rollupOptions: {
        input: { index: resolve(import.meta.dirname, "electron/preload/index.ts") },
        // Sandboxed preloads cannot be ES modules.
        output: { format: "cjs", entryFileNames: "[name].cjs" },
      },
    },
  },
  renderer: {
    root: resolve(import.meta.dirname, "renderer"),
    plugins: [react()],
    // The same bundle as the headless build (renderer/vite.config.ts): minified, vendor chunks.
    build: {
      minify: "esbuild",
      assetsInlineLimit,
      rollupOptions: { input: { index: resolve(import.meta.dirname, "renderer/index.html") }, output: { manualChunks } },
    },
  },
});

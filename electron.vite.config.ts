import { resolve } from "node:path";
import { defineConfig, externalizeDepsPlugin } from "electron-vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  main: {
    plugins: [externalizeDepsPlugin()],
    build: { rollupOptions: { input: { index: resolve(import.meta.dirname, "electron/main/index.ts") } } },
  },
  preload: {
    plugins: [externalizeDepsPlugin()],
    build: { rollupOptions: { input: { index: resolve(import.meta.dirname, "electron/preload/index.ts") } } },
  },
  renderer: {
    root: resolve(import.meta.dirname, "renderer"),
    plugins: [react()],
    build: { rollupOptions: { input: { index: resolve(import.meta.dirname, "renderer/index.html") } } },
  },
});

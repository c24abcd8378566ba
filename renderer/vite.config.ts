import { resolve } from "node:path";
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import { assetsInlineLimit, manualChunks } from "./chunks";

// The renderer alone, for headless mode (no Electron): same output folder as electron-vite's.
export default defineConfig({
  root: resolve(import.meta.dirname),
  base: "./",
  plugins: [react()],
  build: {
    outDir: resolve(import.meta.dirname, "../out/renderer"),
    emptyOutDir: true,
    assetsInlineLimit,
    rollupOptions: {
      output: { manualChunks },
    },
  },
});

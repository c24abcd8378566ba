import { resolve } from "node:path";
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The renderer alone, for headless mode (no Electron): same output folder as electron-vite's.
export default defineConfig({
  root: resolve(import.meta.dirname),
  base: "./",
  plugins: [react()],
  build: {
    outDir: resolve(import.meta.dirname, "../out/renderer"),
    emptyOutDir: true,
    rollupOptions: {
      output: {
        // Vendor code in its own files: React, and markdown + highlight.js grammars (the bulk),
        // so an app update that changes only our code leaves the big files cached as they were.
        manualChunks(id) {
          if (!id.includes("node_modules")) return undefined;
          if (/node_modules\/(react|react-dom|scheduler)\//.test(id)) return "react";
          return "markdown";
        },
      },
    },
  },
});

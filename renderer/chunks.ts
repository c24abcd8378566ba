/**
 * Vendor code in its own files: React, and markdown + highlight.js grammars (the bulk), so an
 * app update that changes only our code leaves the big files cached as they were. Shared by the
 * headless build (renderer/vite.config.ts) and electron-vite's (electron.vite.config.ts).
 */
export function manualChunks(id: string): string | undefined {
  if (!id.includes("node_modules")) return undefined;
  if (/node_modules\/(react|react-dom|scheduler)\//.test(id)) return "react";
  return "markdown";
}

/**
 * Vite inlines small assets as data: URLs; fonts must stay files, as the CSP allows fonts from
 * 'self' only (KaTeX's fonts). Other assets keep Vite's default (undefined: its size rule).
 */
export function assetsInlineLimit(file: string): boolean | undefined {
  return /\.(woff2?|ttf|otf|eot)$/i.test(file) ? false : undefined;
}

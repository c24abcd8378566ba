import { fmtBytes, type DownloadProgress } from "../../../models/downloader.js";

/** A progress printer for stderr: one rewriting line on a terminal, a line per 10% elsewhere. */
export function progressLine(label: string) {
  let lastDecile = -1;
  return (p: DownloadProgress) => {
    const pct = p.totalBytes ? (100 * p.receivedBytes) / p.totalBytes : null;
    const line = `${label}: ${pct !== null ? `${pct.toFixed(1)}% ` : ""}${fmtBytes(p.receivedBytes)}${p.totalBytes ? ` of ${fmtBytes(p.totalBytes)}` : ""}  ${fmtBytes(p.bytesPerSecond)}/s${p.etaSeconds !== null ? `  ${Math.ceil(p.etaSeconds)} s left` : ""}`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(78)}`);
    else {
      const decile = pct === null ? -1 : Math.floor(pct / 10);
      if (decile !== lastDecile) {
        lastDecile = decile;
        process.stderr.write(`${line}\n`);
      }
    }
  };
}

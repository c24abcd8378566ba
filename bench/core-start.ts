// How long the desktop app waits for its core: fork → ready handshake, and graceful stop,
// through the same CoreSupervisor main uses. Baseline: a trivial child that reports ready at
// once (the cost of forking Node with an IPC channel). Rounds interleave the variants.
// Run: npm run build && node --import tsx bench/core-start.ts [rounds]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CoreSupervisor, type CoreSupervisorOptions } from "../electron/main/coreProcess.js";

const root = path.resolve(import.meta.dirname, "..");
const rounds = Number(process.argv[2] ?? 5);
const bundled = path.join(root, "out", "main", "core.js");
if (!fs.existsSync(bundled)) {
  console.error("out/main/core.js is missing: run `npm run build` first");
  process.exit(1);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-bench-"));
const trivial = path.join(tmp, "trivial.mjs");
fs.writeFileSync(
  trivial,
  `process.on("message", () => process.exit(0));
process.send({ type: "ready", url: "http://127.0.0.1:9", token: "bench-token-123", pid: process.pid, dataDir: ${JSON.stringify(tmp)} });
`,
);

const variants: Record<string, CoreSupervisorOptions> = {
  "baseline: trivial child": { entry: trivial },
  "bundled core (out/main/core.js)": { entry: bundled, env: { ...process.env, CLAWRL_HOME: path.join(tmp, "a") } },
  "dev core (entry.ts via tsx)": {
    entry: path.join(root, "electron", "core", "entry.ts"),
    execArgv: ["--import", "tsx"],
    env: { ...process.env, CLAWRL_HOME: path.join(tmp, "b") },
  },
};

const times: Record<string, { start: number[]; stop: number[] }> = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, opts] of Object.entries(variants)) {
    const s = new CoreSupervisor(opts);
    const t0 = performance.now();
    await s.start();
    const t1 = performance.now();
    const res = await s.stop();
    const t2 = performance.now();
    if (!res.graceful) throw new Error(`${name}: stop was not graceful`);
    (times[name] ??= { start: [], stop: [] }).start.push(t1 - t0);
    times[name].stop.push(t2 - t1);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = times["baseline: trivial child"];
console.log(`core process start → ready and graceful stop, median of ${rounds} rounds (${os.cpus().length} CPUs)`);
for (const [name, t] of Object.entries(times)) {
  const st = median(t.start);
  const sp = median(t.stop);
  console.log(
    `${name.padEnd(34)} start ${st.toFixed(0).padStart(5)} ms (${(st / median(base.start)).toFixed(1)}x baseline)   stop ${sp.toFixed(0).padStart(5)} ms (${(sp / median(base.stop)).toFixed(1)}x)`,
  );
}

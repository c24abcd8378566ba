/**
 * Memory over many learning cycles: a desktop app learns for days, so what one cycle leaves
 * behind adds up. A core serves a real-shaped random-weight model (the real vocabulary and head,
 * few layers by default so that a cycle takes a minute or two), and the loop runs `--cycles`
 * times with the app's gate (fluency probe included): a batch of answers with thumbs, then the
 * run, the gate, the swap. After each cycle it prints the core's and the trainer's resident
 * memory, the core's JS heap and the trainer's tensors (its `memory` command, through
 * /api/status), and at the end the growth per cycle after the first (the first
 * allocates what every later one reuses). Nothing here is a test: a leak shows as growth.
 *
 *   node --import tsx bench/learning-soak.ts [--shape qwen2.5-0.5b] [--layers 2] [--cycles 6]
 *        [--batch 8] [--answer-tokens 24] [--steps 2]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startCore } from "../electron/core/core.js";
import type { CheckpointsReply } from "../electron/core/api/training.js";
import type { StatusReply } from "../electron/core/api/status.js";
import { ensureShapeModel } from "../models/tiny/shapeCache.js";
import { liveCore } from "./lib/liveCore.js";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "qwen2.5-0.5b" },
    layers: { type: "string", default: "2" },
    cycles: { type: "string", default: "6" },
    batch: { type: "string", default: "8" },
    "answer-tokens": { type: "string", default: "24" },
    steps: { type: "string", default: "2" },
  },
});
const batch = Number(values.batch);
const cycles = Number(values.cycles);

const modelPath = ensureShapeModel(values.shape, "q8_0", { layers: Number(values.layers) });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-soak-"));
const core = await startCore({ model: modelPath, dataDir, token: "bench", uiDir: "", training: { stepsPerRun: Number(values.steps) } });
const { api, get, feedBatch } = liveCore(core, Number(values["answer-tokens"]));
await api("PATCH", "/api/settings", { batchSize: batch });

const MiB = 2 ** 20;
/** Resident memory of a process (VmRSS), in MiB; null when it is gone. */
function rssOf(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

interface Row {
  cycle: number;
  seconds: number;
  verdict: string;
  coreRss: number;
  heap: number;
  trainerRss: number | null;
  trainerTensors: number | null;
}
const rows: Row[] = [];
console.log(`${path.basename(modelPath)}, ${os.cpus().length} CPUs; batch ${batch}, ${values.steps} steps a run, ${cycles} cycles`);
console.log("cycle  seconds  verdict     core RSS  core heap  trainer RSS  trainer tensors (MiB)");
for (let c = 1; c <= cycles; c++) {
  const t0 = performance.now();
  const before = (await get("/api/checkpoints")).checkpoints.length;
  await feedBatch(batch);
  let st: StatusReply;
  let list: CheckpointsReply;
  for (;;) {
    st = await get("/api/status");
    list = await get("/api/checkpoints");
    if (st.training.state === "error") throw new Error(`learning stopped: ${st.training.lastError}`);
    if (list.checkpoints.length > before && st.training.state === "idle") break;
    await new Promise((r) => setTimeout(r, 500));
  }
  global.gc?.();
  const row: Row = {
    cycle: c,
    seconds: (performance.now() - t0) / 1000,
    verdict: list.checkpoints[0].verdict,
    coreRss: process.memoryUsage().rss / MiB,
    heap: process.memoryUsage().heapUsed / MiB,
    trainerRss: rssOf(st.training.trainerPid ?? null),
    trainerTensors: st.training.trainerMemory ? st.training.trainerMemory.tensorBytes / MiB : null,
  };
  rows.push(row);
  console.log(
    `${String(c).padStart(5)}  ${row.seconds.toFixed(1).padStart(7)}  ${row.verdict.padEnd(10)}  ${row.coreRss.toFixed(0).padStart(8)}  ${row.heap.toFixed(0).padStart(9)}  ${row.trainerRss?.toFixed(0).padStart(11) ?? "          —"}  ${row.trainerTensors?.toFixed(1).padStart(15) ?? "              —"}`,
  );
}
await core.close();
fs.rmSync(dataDir, { recursive: true, force: true });

if (rows.length >= 3) {
  const growth = (f: (r: Row) => number | null) => {
    const a = f(rows[1]);
    const b = f(rows[rows.length - 1]);
    return a === null || b === null ? "—" : `${((b - a) / (rows.length - 2)).toFixed(1)} MiB`;
  };
  console.log(
    `growth per cycle after the first: core RSS ${growth((r) => r.coreRss)}, core heap ${growth((r) => r.heap)}, trainer RSS ${growth((r) => r.trainerRss)}, trainer tensors ${growth((r) => r.trainerTensors)}`,
  );
}

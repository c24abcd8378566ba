#!/usr/bin/env node
/**
 * The folder-level import graph of the repo's TypeScript, and the two rules it must keep
 * (docs/architecture.md, issue 27):
 *
 * 1. No cycle between rooms: no room imports a room that imports it back, directly or through
 *    others. Rooms are the top-level folders (electron, trainer, models, common, renderer, eval,
 *    bench, test, scripts), and, inside the core, each folder of electron/core/ (each file at its
 *    root counts as a room of its own). The two levels are checked apart: electron/core/* among
 *    themselves, and the top-level folders with all of electron counted as one.
 * 2. electron/** imports from trainer/** only the trainer's protocol (trainer/protocol.ts) and
 *    its entries (trainer/worker.ts, trainer/entries/**): the trainer is a process the core starts,
 *    not a library it links.
 *
 * Every import counts: static, `import type`, `export … from` and dynamic `import()`. Only
 * relative specifiers are resolved (packages are not rooms). Prints the graph (room → rooms it
 * imports, with the number of importing files), then any violation; exits 1 on one.
 *
 *   node scripts/check-imports.mjs            the summary and the verdict
 *   node scripts/check-imports.mjs --quiet    the verdict only
 *   node scripts/check-imports.mjs --core-cycles-warn   cycles among electron/core/* warn, not fail
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "..");
const quiet = process.argv.includes("--quiet");
/** Cycles among the core's rooms are printed as warnings, not failures (while they are being taken apart). */
const coreWarnOnly = process.argv.includes("--core-cycles-warn");
const SKIP = new Set(["node_modules", "out", "dist", "release", "build", "test-artifacts", ".git", ".cache", ".scratch"]);
const EXT = /\.(ts|tsx|mts|cts)$/;

/** Every TypeScript file under the repo, repo-relative with forward slashes. */
function sourceFiles(dir = root, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name.startsWith(".") || SKIP.has(e.name)) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, out);
    else if (EXT.test(e.name) && !e.name.endsWith(".d.ts")) out.push(path.relative(root, p).split(path.sep).join("/"));
  }
  return out;
}

/** The file a relative specifier names (a .js specifier names the .ts beside it), or null. */
function resolveSpecifier(from, spec) {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  const stem = base.replace(/\.(m|c)?jsx?$/, "");
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`, `${base}/index.ts`, `${base}/index.tsx`];
  return candidates.find((c) => fs.existsSync(path.join(root, c)) && fs.statSync(path.join(root, c)).isFile()) ?? null;
}

/** Top-level room of a file ("electron" for all of electron/). */
const topRoom = (file) => (file.includes("/") ? file.split("/")[0] : "(root)");

/**
 * The core room of a file under electron/core/, or null. A file at the core's root (core.ts, the
 * composition root that imports every room; domainErrors.ts, which every room may import) is a
 * node of its own: counting them as one room would join rooms that never import each other.
 */
function coreRoom(file) {
  if (!file.startsWith("electron/core/")) return null;
  const rest = file.slice("electron/core/".length).split("/");
  return rest.length === 1 ? file : `electron/core/${rest[0]}`;
}

/** What electron/** may import from trainer/**. */
const TRAINER_ENTRY = (file) => file === "trainer/protocol.ts" || file === "trainer/worker.ts" || file.startsWith("trainer/entries/");

/** room → room → files importing it; `typeOnly` lists the edges no run-time import makes. */
const typeOnly = new Map();
function addEdge(graph, from, to, file, isType) {
  if (from === to) return;
  if (!graph.has(from)) graph.set(from, new Map());
  const targets = graph.get(from);
  if (!targets.has(to)) targets.set(to, new Set());
  targets.get(to).add(file);
  const key = `${from}\0${to}`;
  typeOnly.set(key, (typeOnly.get(key) ?? true) && isType);
}

/** Whether the import statement around `pos` is `import type` / `export type` (erased at run time). */
function isTypeImport(text, pos) {
  const start = Math.max(text.lastIndexOf(";", pos), text.lastIndexOf("}\n", pos - 1) + 1, 0);
  return /\b(import|export)\s+type\b/.test(text.slice(start, pos));
}

/** The cycles of a room graph: each strongly connected component of more than one room (Tarjan). */
function cyclesOf(graph) {
  const nodes = new Set([...graph.keys(), ...[...graph.values()].flatMap((m) => [...m.keys()])]);
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) components.push(comp.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!idx.has(v)) visit(v);
  return components;
}

/** The edges inside a cycle, each with one file that makes it (what to look at to break it). */
function cycleEdges(graph, comp) {
  const inComp = new Set(comp);
  const lines = [];
  for (const from of comp) {
    for (const [to, files] of graph.get(from) ?? []) {
      if (!inComp.has(to)) continue;
      const types = typeOnly.get(`${from}\0${to}`) ? ", types only" : "";
      lines.push(`    ${from} → ${to}  (${files.size} file${files.size === 1 ? "" : "s"}${types}, e.g. ${[...files].sort()[0]})`);
    }
  }
  return lines;
}

const top = new Map();
const core = new Map();
const forbidden = [];
let fileCount = 0;
let importCount = 0;
for (const file of sourceFiles()) {
  fileCount++;
  const text = fs.readFileSync(path.join(root, file), "utf8");
  const info = ts.preProcessFile(text, true, true);
  for (const ref of info.importedFiles) {
    if (!ref.fileName.startsWith(".")) continue;
    const target = resolveSpecifier(file, ref.fileName);
    if (!target) continue;
    importCount++;
    const isType = isTypeImport(text, ref.pos);
    addEdge(top, topRoom(file), topRoom(target), file, isType);
    const a = coreRoom(file);
    const b = coreRoom(target);
    if (a && b) addEdge(core, a, b, file, isType);
    if (file.startsWith("electron/") && target.startsWith("trainer/") && !TRAINER_ENTRY(target)) forbidden.push(`    ${file} → ${target}`);
  }
}

function printGraph(title, graph) {
  console.log(title);
  for (const from of [...graph.keys()].sort()) {
    const targets = [...graph.get(from)].sort(([a], [b]) => (a < b ? -1 : 1)).map(([to, files]) => `${to} (${files.size})`);
    console.log(`  ${from} → ${targets.join(", ")}`);
  }
}

if (!quiet) {
  console.log(`${fileCount} TypeScript files, ${importCount} relative imports\n`);
  printGraph("Top-level rooms (room → rooms it imports, with the number of importing files):", top);
  console.log("");
  printGraph("Core rooms (electron/core/*):", core);
  console.log("");
}

const problems = [];
const warnings = [];
for (const [level, graph] of [
  ["top-level rooms", top],
  ["core rooms", core],
]) {
  for (const comp of cyclesOf(graph)) {
    const line = `  import cycle between ${level}: ${comp.join(", ")}\n${cycleEdges(graph, comp).join("\n")}`;
    (coreWarnOnly && graph === core ? warnings : problems).push(line);
  }
}
if (warnings.length > 0) console.warn(`check-imports: ${warnings.length} warning${warnings.length === 1 ? "" : "s"}\n${warnings.join("\n")}`);
if (forbidden.length > 0) {
  problems.push(
    `  electron/ imports trainer/ internals (only trainer/protocol.ts, trainer/worker.ts and trainer/entries/** may be imported):\n${forbidden.join("\n")}`,
  );
}
if (problems.length > 0) {
  console.error(`check-imports: ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems.join("\n")}`);
  process.exit(1);
}
console.log(
  `check-imports: no cycle between ${warnings.length > 0 ? "top-level rooms (core rooms: see the warnings)" : "rooms"}; electron/ imports only the trainer's protocol and entries`,
);

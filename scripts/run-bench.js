#!/usr/bin/env node
// `npm run bench -- NAME [args]` runs bench/NAME.ts under tsx with the args; with no name it
// lists the benchmarks and what each measures (the first line of its header comment).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, "bench");
const names = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => f.slice(0, -3))
  .sort();

/** The first sentence of a bench's header comment. */
function summary(name) {
  const text = fs.readFileSync(path.join(dir, `${name}.ts`), "utf8");
  const comment = /^\s*(?:\/\*\*?([\s\S]*?)\*\/|((?:\/\/.*\n)+))/.exec(text);
  const body = (comment?.[1] ?? comment?.[2] ?? "")
    .split("\n")
    .map((l) => l.replace(/^\s*(\*|\/\/)\s?/, "").trim())
    .join(" ")
    .trim();
  const sentence = /^(.*?[.:])(\s|$)/.exec(body)?.[1] ?? body;
  return sentence.length > 110 ? `${sentence.slice(0, 107)}…` : sentence;
}

const [name, ...args] = process.argv.slice(2);
if (!name) {
  console.log("Usage: npm run bench -- NAME [args]   (node --import tsx bench/NAME.ts [args])\n");
  for (const n of names) console.log(`  ${n.padEnd(24)} ${summary(n)}`);
  process.exit(0);
}
if (!names.includes(name)) {
  console.error(`no benchmark named ${name}; one of: ${names.join(", ")}`);
  process.exit(2);
}
const r = spawnSync(process.execPath, ["--import", "tsx", path.join(dir, `${name}.ts`), ...args], { stdio: "inherit", cwd: root });
process.exit(r.status ?? 1);

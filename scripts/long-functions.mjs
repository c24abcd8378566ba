#!/usr/bin/env node
// Lists the functions longer than a screen (issue 27: none over 120 lines outside test/).
// `node scripts/long-functions.mjs` prints them longest first; `--check` exits 1 if any is over.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const LIMIT = 120;
const root = path.resolve(import.meta.dirname, "..");
const files = execFileSync("git", ["ls-files", "*.ts", "*.tsx", "*.mts", "*.mjs", "*.js"], { cwd: root, encoding: "utf8" })
  .split("\n")
  .filter((f) => f && !f.startsWith("test/") && fs.existsSync(path.join(root, f)));

const long = [];
for (const f of files) {
  const src = ts.createSourceFile(f, fs.readFileSync(path.join(root, f), "utf8"), ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isFunctionLike(n) && "body" in n && n.body) {
      const start = src.getLineAndCharacterOfPosition(n.getStart()).line;
      const end = src.getLineAndCharacterOfPosition(n.getEnd()).line;
      const lines = end - start + 1;
      if (lines > LIMIT) long.push({ where: `${f}:${start + 1}`, lines, name: n.name?.getText(src) ?? "(anonymous)" });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
}
long.sort((a, b) => b.lines - a.lines);
for (const l of long) console.log(`${String(l.lines).padStart(4)} lines  ${l.name}  ${l.where}`);
console.log(long.length ? `${long.length} function(s) over ${LIMIT} lines` : `no function over ${LIMIT} lines`);
if (process.argv.includes("--check") && long.length) process.exit(1);

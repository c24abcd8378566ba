/**
 * Reading what the user gives the Add-a-server form: a pasted Claude Desktop entry (the whole
 * `{"mcpServers": {...}}`, a `{"name": {...}}` map, a `"name": {...}` line, or one entry with the
 * name typed apart), or the fields of a program or a web address.
 */
import type { ServerEntry } from "../../api/tools.js";

/** The names the core accepts: they prefix the tool names the model sees (`server__tool`). */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

export const serverNameRule = "Use letters, digits, - and _ only (up to 48).";

type Parsed = { ok: true; servers: { name: string; entry: ServerEntry }[] } | { ok: false; error: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function isEntry(v: unknown): v is ServerEntry {
  return isObject(v) && (typeof v.command === "string" || typeof v.url === "string");
}

/** Parses pasted JSON; `name` is used for a single entry that carries no name of its own. */
export function parsePastedServers(text: string, name: string): Parsed {
  const t = text.trim();
  if (!t) return { ok: false, error: "Paste a server's entry first." };
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    // `"name": {...}` as copied out of a bigger file: wrap it in braces.
    try {
      v = JSON.parse(`{${t.replace(/,\s*$/, "")}}`);
    } catch (e) {
      return { ok: false, error: `This is not valid JSON: ${(e as Error).message}` };
    }
  }
  if (isObject(v) && isObject(v.mcpServers)) v = v.mcpServers;
  if (isEntry(v)) {
    if (!name.trim()) return { ok: false, error: "This entry has no name: type one in Name." };
    return checkNames([{ name: name.trim(), entry: v }]);
  }
  if (!isObject(v)) return { ok: false, error: 'Expected an object such as {"mcpServers": {"files": {"command": "npx", "args": [...]}}}.' };
  const servers: { name: string; entry: ServerEntry }[] = [];
  for (const [n, e] of Object.entries(v)) {
    if (!isEntry(e)) return { ok: false, error: `"${n}" needs a "command" (a program to start) or a "url" (a server on the web).` };
    servers.push({ name: n, entry: e });
  }
  if (servers.length === 0) return { ok: false, error: "No server found in what was pasted." };
  return checkNames(servers);
}

function checkNames(servers: { name: string; entry: ServerEntry }[]): Parsed {
  const bad = servers.find((s) => !SERVER_NAME.test(s.name));
  return bad ? { ok: false, error: `"${bad.name}" cannot be a server's name. ${serverNameRule}` } : { ok: true, servers };
}

/** Lines of `KEY=value` (env) or `Name: value` (headers) as an object; the first bad line is an error. */
export function parsePairs(text: string, sep: "=" | ":"): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf(sep);
    if (i <= 0) return { ok: false, error: `"${line}" should read ${sep === "=" ? "NAME=value" : "Name: value"}.` };
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return { ok: true, value: out };
}

/** Arguments, one per line (so an argument may hold spaces). */
export function parseArgs(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

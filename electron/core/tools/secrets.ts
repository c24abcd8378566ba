/**
 * A server's `env` and `headers` values are secrets (API keys, tokens): they never appear in
 * logs, API replies, exports or the stderr tail. Everything the tools code shows about a server
 * or passes on from it goes through a Masker made from its config.
 */
import type { ServerConfig } from "./config.js";

export const MASK = "****";

/** Values shorter than this are not searched for in free text ("1", "true" would mask everything). */
const MIN_SECRET = 6;

export type Masker = (text: string) => string;

/** The secret values of a server: its env and header values, and credentials in its URL. */
export function secretsOf(c: Pick<ServerConfig, "env" | "headers" | "url">): string[] {
  const out = [...Object.values(c.env), ...Object.values(c.headers)];
  for (const v of Object.values(c.headers)) {
    // "Bearer abc…": the token alone may appear elsewhere too.
    const m = /^\s*\S+\s+(\S{6,})\s*$/.exec(v);
    if (m) out.push(m[1]);
  }
  if (c.url) {
    try {
      const u = new URL(c.url);
      if (u.password) out.push(decodeURIComponent(u.password));
      for (const v of u.searchParams.values()) out.push(v);
    } catch {
      // an unparsable URL never reaches a transport
    }
  }
  return [...new Set(out.filter((v) => v.length >= MIN_SECRET))].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of the server's secret values (longest first) with ****. */
export function maskerFor(c: Pick<ServerConfig, "env" | "headers" | "url">): Masker {
  const secrets = secretsOf(c);
  if (secrets.length === 0) return (t) => t;
  return (text) => {
    let out = text;
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join(MASK);
    return out;
  };
}

/** The command line or URL a person may see: env as KEY=****, headers as Name: ****, URL credentials and query values masked. */
export function summaryOf(c: ServerConfig): string {
  if (c.transport === "http") {
    let url = c.url ?? "";
    try {
      const u = new URL(url);
      if (u.username) u.username = MASK;
      if (u.password) u.password = MASK;
      for (const k of [...new Set(u.searchParams.keys())]) u.searchParams.set(k, MASK);
      url = u.toString();
    } catch {
      // shown as written: it is not a URL the host will use
    }
    const headers = Object.keys(c.headers).map((k) => `${k}: ${MASK}`);
    return [url, ...(headers.length ? [`(${headers.join(", ")})`] : [])].join(" ");
  }
  const env = Object.keys(c.env).map((k) => `${k}=${MASK}`);
  return [...env, c.command ?? "", ...c.args.map(quoteArg)].join(" ");
}

function quoteArg(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a);
}

/**
 * The walls every request passes before any route runs (docs/security.md):
 * 1. the path is in canonical form (one spelling per route: no percent-encoded unreserved
 *    characters, no encoded separators or NUL, no empty, `.` or `..` segments, no `;`), so no
 *    second spelling can reach a handler that a check on the first spelling let through;
 * 2. the Host header names this server (loopback names, or a name the user added): a page on a
 *    rebound DNS name cannot talk to the core with the user's browser;
 * 3. a state-changing request from a browser (it sends Origin, and Sec-Fetch-Site) comes from
 *    the core's own origin.
 * Authentication itself is decided on the matched route in app.ts.
 */

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Why a raw request path is not canonical, or null when it is. */
export function nonCanonicalPathReason(rawUrl: string): string | null {
  const q = rawUrl.indexOf("?");
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  if (!path.startsWith("/")) return "the path must start with /";
  if (path.includes("//")) return "empty path segment";
  if (path.includes("\\") || path.includes(";")) return "reserved character in the path";
  // Control characters and anything outside printable ASCII must come percent-encoded.
  if (/[^\x21-\x7e]/.test(path)) return "unencoded character in the path";
  for (const seg of path.split("/").slice(1)) {
    if (seg === "." || seg === "..") return "dot segment";
  }
  for (let i = path.indexOf("%"); i !== -1; i = path.indexOf("%", i + 1)) {
    const hex = path.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return "malformed percent-encoding";
    const code = parseInt(hex, 16);
    const ch = String.fromCharCode(code);
    if (UNRESERVED.test(ch)) return `percent-encoded unreserved character (%${hex})`;
    // Encoded separators, NUL and controls would change which segment a character belongs to.
    if (ch === "/" || ch === "\\" || code < 0x20 || code === 0x7f) return `percent-encoded separator or control character (%${hex})`;
  }
  return null;
}

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/** A host name as it appears in a Host header, lower-cased; IPv6 in brackets. */
export function normalizeHostName(name: string): string {
  const n = name.trim().toLowerCase();
  return n.includes(":") && !n.startsWith("[") ? `[${n}]` : n;
}

/** Splits a Host header value into name and port (null when absent); null for a malformed value. */
export function parseHostHeader(value: string): { name: string; port: number | null } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9\-._]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!m) return null;
  return { name: m[1].toLowerCase(), port: m[2] === undefined ? null : Number(m[2]) };
}

export interface HostPolicy {
  /** the port the server listens on (null until it listens) */
  port: () => number | null;
  /** names the user allowed besides the loopback ones (Settings `allowedHosts`) */
  extraNames: () => readonly string[];
}

function allowedNames(policy: HostPolicy): Set<string> {
  return new Set([...LOOPBACK_NAMES, ...policy.extraNames().map(normalizeHostName)]);
}

/** Whether a Host header names this server: an allowed name, and this server's port when one is given. */
export function hostAllowed(hostHeader: string | undefined, policy: HostPolicy): boolean {
  if (hostHeader === undefined) return false;
  const h = parseHostHeader(hostHeader);
  if (!h || !allowedNames(policy).has(h.name)) return false;
  const port = policy.port();
  return h.port === null ? port === 80 : port === null || h.port === port;
}

/** Whether an Origin header is this server's own origin (http, an allowed name, this port). */
export function originAllowed(origin: string, policy: HostPolicy): boolean {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false; // "null" (sandboxed frames, file:) and garbage
  }
  if (u.protocol !== "http:" || u.pathname !== "/" || u.username || u.password) return false;
  return hostAllowed(u.host, policy);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Why a browser request may not act, or null. Non-browser clients send neither Origin nor
 * Sec-Fetch-Site and pass; a browser sends Origin on every cross-origin request that can change
 * state, and Sec-Fetch-Site on every request.
 */
export function crossSiteReason(method: string, headers: { origin?: string; "sec-fetch-site"?: string | string[] }, policy: HostPolicy): string | null {
  const site = headers["sec-fetch-site"];
  if (site === "cross-site" || (Array.isArray(site) && site.includes("cross-site"))) return "cross-site request";
  if (SAFE_METHODS.has(method)) return null;
  if (headers.origin !== undefined && !originAllowed(headers.origin, policy)) return `origin ${JSON.stringify(headers.origin)} is not this app`;
  return null;
}

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { EnvHttpProxyAgent, fetch, type Dispatcher } from "undici";

/** Download progress, as the CLI and /api/events show it. */
export interface DownloadProgress {
  receivedBytes: number;
  totalBytes: number | null;
  /** Smoothed over the last few seconds. */
  bytesPerSecond: number;
  etaSeconds: number | null;
  /** True while resuming a partial file (receivedBytes includes what was there). */
  resumed: boolean;
}

export interface DownloadOptions {
  url: string;
  dest: string;
  /** Expected SHA-256 (hex). Without it, the server's published LFS hash (X-Linked-Etag) is used, if any. */
  sha256?: string | null;
  headers?: Record<string, string>;
  onProgress?: (p: DownloadProgress) => void;
  signal?: AbortSignal;
  /** Attempts after the first on network errors, truncation and 5xx/429 (default 5). */
  retries?: number;
  /** First back-off delay; doubles each retry (default 1000 ms). */
  backoffMs?: number;
  /** Checks the finished file before it is renamed into place (e.g. "is it GGUF?"); throw to refuse. */
  validate?: (file: string) => void | Promise<void>;
  dispatcher?: Dispatcher;
}

export interface DownloadResult {
  path: string;
  bytes: number;
  sha256: string;
  /** Where the checksum we verified against came from. */
  verifiedAgainst: "catalog" | "server" | "none";
}

/** A download failure with a message for users; `retryable` ones are retried with back-off. */
export class DownloadError extends Error {
  constructor(
    message: string,
    readonly kind: "http" | "html" | "checksum" | "invalid" | "disk" | "network" | "unreachable" | "truncated" | "cancelled",
    readonly retryable = false,
  ) {
    super(message);
    this.name = "DownloadError";
  }
}

const SHA256_RE = /^[0-9a-f]{64}$/;

/** A partial download's sidecar: lets a later run resume only the same remote file. */
interface PartMeta {
  url: string;
  sha256: string | null;
  totalBytes: number | null;
}

let defaultDispatcher: Dispatcher | undefined;
/** Honours HTTP_PROXY / HTTPS_PROXY / NO_PROXY, as users of proxies expect. */
function proxyAwareDispatcher(): Dispatcher {
  defaultDispatcher ??= new EnvHttpProxyAgent();
  return defaultDispatcher;
}

function readMeta(file: string): PartMeta | null {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as PartMeta;
  } catch {
    return null;
  }
}

function writeMeta(file: string, meta: PartMeta): void {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(meta));
  fs.renameSync(tmp, file);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled());
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(cancelled());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

const cancelled = () => new DownloadError("download cancelled (the partial file is kept; run again to resume)", "cancelled");

async function sha256OfFile(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The SHA-256 a Hugging Face-style server publishes for an LFS file, from its headers. */
function publishedSha256(headers: Headers): string | null {
  for (const name of ["x-linked-etag", "etag"]) {
    const v = headers.get(name)?.replace(/^W\//, "").replace(/"/g, "").trim().toLowerCase();
    if (v && SHA256_RE.test(v)) return v;
  }
  return null;
}

/**
 * Follows redirects ourselves so we can read Hugging Face's X-Linked-Etag / X-Linked-Size on
 * the first hop (the CDN's answer does not carry them), and so the Authorization header is
 * not sent to another host.
 */
async function request(opts: DownloadOptions, rangeStart: number) {
  let url = opts.url;
  let published: string | null = null;
  const origin = new URL(url).origin;
  for (let hop = 0; hop < 8; hop++) {
    const headers: Record<string, string> = { "user-agent": "clawrl-desktop", accept: "*/*" };
    if (new URL(url).origin === origin) Object.assign(headers, opts.headers);
    if (rangeStart > 0) headers.range = `bytes=${rangeStart}-`;
    let res;
    try {
      res = await fetch(url, { headers, redirect: "manual", signal: opts.signal, dispatcher: opts.dispatcher ?? proxyAwareDispatcher() });
    } catch (err) {
      if (opts.signal?.aborted) throw cancelled();
      const cause = (err as Error & { cause?: Error & { code?: string } }).cause;
      // No response at all: the connection never opened (a drop mid-transfer fails in receiveBody).
      const host = new URL(url).host;
      const why = unreachableMessage(host, cause?.code) ?? `Could not reach ${host}: ${cause?.message ?? (err as Error).message}.`;
      throw new DownloadError(why, "unreachable", true);
    }
    published ??= publishedSha256(res.headers);
    if (res.status >= 300 && res.status < 400 && res.headers.get("location")) {
      await res.body?.cancel();
      url = new URL(res.headers.get("location")!, url).toString();
      continue;
    }
    return { res, published };
  }
  throw new DownloadError(`too many redirects for ${opts.url}`, "http");
}

/**
 * A host that cannot be reached at all (no name lookup, refused, no route, no answer to the
 * connect) is retried only for UNREACHABLE_BUDGET_MS, so an offline machine hears so in seconds,
 * not after the minute of back-off a dropped transfer gets.
 */
export const UNREACHABLE_BUDGET_MS = 10_000;

/** The plain sentence for a connection that never opened, by its error code; null for other failures. */
export function unreachableMessage(host: string, code: string | undefined): string | null {
  const retry = "Check the connection (or HTTPS_PROXY, HF_ENDPOINT) and retry.";
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `You seem to be offline: could not reach ${host} (its name could not be looked up). ${retry}`;
    case "ECONNREFUSED":
      return `Could not reach ${host}: the connection was refused. ${retry}`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "ENETDOWN":
      return `You seem to be offline: could not reach ${host} (no route to it). ${retry}`;
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `Could not reach ${host}: it did not answer. ${retry}`;
    default:
      return null;
  }
}

/**
 * Downloads `url` to `dest`: resumable (HTTP Range, a `.part` file kept across runs and
 * cancels), retried with exponential back-off, SHA-256-verified and validated before it is
 * renamed into place, so no half file is ever used.
 */
export async function downloadFile(opts: DownloadOptions): Promise<DownloadResult> {
  const part = `${opts.dest}.part`;
  const metaFile = `${opts.dest}.part.json`;
  fs.mkdirSync(path.dirname(opts.dest), { recursive: true });
  const retries = opts.retries ?? 5;
  const backoff = opts.backoffMs ?? 1000;
  let expected = opts.sha256?.toLowerCase() ?? null;
  let verifiedAgainst: DownloadResult["verifiedAgainst"] = expected ? "catalog" : "none";

  // A part left by a download of another URL (or another expected file) cannot be resumed.
  const oldMeta = readMeta(metaFile);
  if (fs.existsSync(part) && (!oldMeta || oldMeta.url !== opts.url || (expected && oldMeta.sha256 && oldMeta.sha256 !== expected))) {
    fs.rmSync(part, { force: true });
  }

  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      const have = fs.existsSync(part) ? fs.statSync(part).size : 0;
      const { res, published } = await request(opts, have);
      if (published) {
        if (expected && published !== expected) {
          await res.body?.cancel();
          throw new DownloadError(`the server publishes SHA-256 ${published} for this file, but the catalog expects ${expected}: refusing it`, "checksum");
        }
        if (!expected) verifiedAgainst = "server";
        expected ??= published;
      }

      let start = have;
      if (res.status === 416 && have > 0) {
        // Nothing left to fetch: the part is complete (verified below) or bogus (then restart).
        await res.body?.cancel();
      } else if (res.status === 200 || res.status === 206) {
        const type = res.headers.get("content-type") ?? "";
        if (/text\/html/i.test(type)) {
          await res.body?.cancel();
          throw new DownloadError(
            `${new URL(opts.url).host} sent a web page instead of the file (a login or error page?): check the model name, or set HF_TOKEN for gated models`,
            "html",
          );
        }
        if (res.status === 200 && have > 0) start = 0; // server ignores Range: start over
        if (res.status === 206) {
          const m = /bytes (\d+)-/.exec(res.headers.get("content-range") ?? "");
          if (!m || Number(m[1]) !== have) {
            await res.body?.cancel();
            fs.rmSync(part, { force: true });
            throw new DownloadError("the server resumed at the wrong offset; restarting", "network", true);
          }
        }
        const length = Number(res.headers.get("content-length") ?? NaN);
        const total = Number.isFinite(length) ? start + length : null;
        writeMeta(metaFile, { url: opts.url, sha256: expected, totalBytes: total });
        if (total !== null) {
          const free = freeBytes(path.dirname(opts.dest));
          if (free !== null && free < total - start) {
            await res.body?.cancel();
            throw new DownloadError(`not enough disk space: ${fmtBytes(total - start)} needed, ${fmtBytes(free)} free in ${path.dirname(opts.dest)}`, "disk");
          }
        }
        await receiveBody(res.body, part, start, total, opts, start > 0);
      } else {
        await res.body?.cancel();
        const status = res.status;
        const retryable = status === 429 || status >= 500;
        const hint = status === 401 || status === 403 ? " (a gated or private model? set HF_TOKEN)" : status === 404 ? " (no such repository or file)" : "";
        throw new DownloadError(`HTTP ${status} from ${new URL(opts.url).host}${hint}`, "http", retryable);
      }

      const size = fs.statSync(part).size;
      const sha = await sha256OfFile(part);
      if (expected && sha !== expected) {
        fs.rmSync(part, { force: true });
        fs.rmSync(metaFile, { force: true });
        throw new DownloadError(`checksum mismatch: got SHA-256 ${sha}, expected ${expected}; the file was discarded`, "checksum");
      }
      if (opts.validate) {
        try {
          await opts.validate(part);
        } catch (err) {
          fs.rmSync(part, { force: true });
          fs.rmSync(metaFile, { force: true });
          throw new DownloadError(`the downloaded file is not usable: ${(err as Error).message}`, "invalid");
        }
      }
      fs.renameSync(part, opts.dest);
      fs.rmSync(metaFile, { force: true });
      return { path: opts.dest, bytes: size, sha256: sha, verifiedAgainst };
    } catch (err) {
      const e = err instanceof DownloadError ? err : diskOrNetwork(err, opts);
      if (!e.retryable || attempt >= retries || opts.signal?.aborted) throw opts.signal?.aborted ? cancelled() : e;
      const delay = backoff * 2 ** attempt;
      if (e.kind === "unreachable" && Date.now() - started + delay > UNREACHABLE_BUDGET_MS) throw e;
      await sleep(delay, opts.signal);
    }
  }
}

function diskOrNetwork(err: unknown, opts: DownloadOptions): DownloadError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new DownloadError(`the disk is full while writing ${opts.dest}.part; free some space and run again to resume`, "disk");
  }
  if (opts.signal?.aborted) return cancelled();
  return new DownloadError(`download interrupted: ${(err as Error).message}`, "network", true);
}

async function receiveBody(
  body: ReadableStream<Uint8Array> | null,
  part: string,
  start: number,
  total: number | null,
  opts: DownloadOptions,
  resumed: boolean,
): Promise<void> {
  if (!body) throw new DownloadError("empty response body", "network", true);
  const fh = await fs.promises.open(part, start > 0 ? "a" : "w");
  let received = start;
  const samples: Array<[number, number]> = [[Date.now(), received]];
  let lastReport = 0;
  const report = (force = false) => {
    const now = Date.now();
    if (!opts.onProgress || (!force && now - lastReport < 200)) return;
    lastReport = now;
    samples.push([now, received]);
    while (samples.length > 2 && now - samples[0][0] > 5000) samples.shift();
    const [t0, b0] = samples[0];
    const bps = now > t0 ? ((received - b0) * 1000) / (now - t0) : 0;
    opts.onProgress({
      receivedBytes: received,
      totalBytes: total,
      bytesPerSecond: bps,
      etaSeconds: total !== null && bps > 0 ? (total - received) / bps : null,
      resumed,
    });
  };
  try {
    for await (const chunk of body) {
      await fh.write(chunk);
      received += chunk.byteLength;
      report();
    }
    await fh.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (opts.signal?.aborted || code === "ENOSPC" || code === "EDQUOT") throw err;
    // The connection dropped mid-body: what arrived is on disk; the retry resumes after it.
    await fh.sync().catch(() => undefined);
    throw new DownloadError(
      `the connection closed early (${fmtBytes(received)}${total !== null ? ` of ${fmtBytes(total)}` : ""}); resuming`,
      "truncated",
      true,
    );
  } finally {
    await fh.close();
  }
  report(true);
  if (total !== null && received < total) {
    throw new DownloadError(`the connection closed early (${fmtBytes(received)} of ${fmtBytes(total)}); resuming`, "truncated", true);
  }
}

function freeBytes(dir: string): number | null {
  try {
    const s = fs.statfsSync(dir);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

export function fmtBytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

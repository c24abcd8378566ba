/**
 * Hugging Face search for GGUF models (the hub's API behind HF_ENDPOINT, as downloads use it):
 * repositories matching words, a repository's GGUF files grouped by quantization (a split file's
 * parts as one entry), and a file's header read over HTTP without downloading the weights (for
 * the memory plan's verdicts). No tensor library: the core and the CLI import it as they are.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { unreachableMessage } from "./downloader.js";
import { readGguf, type GgufFile } from "./gguf/reader.js";
import { hfAuthHeaders, hfEndpoint } from "./hfSource.js";

/** A hub request that gets no answer in this long fails (search is interactive). */
const HUB_TIMEOUT_MS = 15_000;

/** Why the hub could not be asked: unreachable (offline), or it answered with an error. */
export class HubError extends Error {
  constructor(
    message: string,
    readonly kind: "unreachable" | "not-found" | "http",
  ) {
    super(message);
    this.name = "HubError";
  }
}

/** llama.cpp's quantization names as they appear in file names, longest first where one is the start of another. */
const QUANT_RE = /(?<![A-Za-z0-9])(IQ[1-4]_(?:XXS|XS|NL|S|M)|TQ[12]_0|Q[2-8]_K(?:_XXL|_XL|_S|_M|_L)?|Q[4-8]_[01]|BF16|F16|F32|MXFP4)(?![A-Za-z0-9])/i;
/** A part of a split GGUF: name-00001-of-00003.gguf (llama.cpp's gguf-split). */
const SPLIT_RE = /-(\d{5})-of-(\d{5})\.gguf$/i;

/** The quantization a file's name says it has ("Q4_K_M", "IQ3_XXS", "F16"), upper-case; null when its name does not say. */
export function quantizationOfName(file: string): string | null {
  const m = QUANT_RE.exec(path.basename(file));
  return m ? m[1].toUpperCase() : null;
}

/** Which part of a split GGUF a file is ({ part: 1, of: 3 }), or null for a single file. */
export function splitPartOf(file: string): { part: number; of: number } | null {
  const m = SPLIT_RE.exec(file);
  return m ? { part: Number(m[1]), of: Number(m[2]) } : null;
}

export interface HubRepo {
  /** owner/name */
  id: string;
  downloads: number | null;
  likes: number | null;
  /** ISO time of its last change, when the hub says */
  updatedAt: string | null;
}

export interface HubGgufFile {
  /** the file (for a split model: its first part) as the repository names it */
  file: string;
  quantization: string | null;
  /** the whole model's bytes (all parts of a split one) */
  sizeBytes: number;
  /** 1 for a single file */
  parts: number;
  /** why this cannot be downloaded here (a split file, a vision projector); null when it can */
  refused: string | null;
}

interface RawTreeEntry {
  type?: string;
  path?: string;
  size?: number;
  lfs?: { size?: number } | null;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** GET on the hub with its token, a timeout, and the offline sentence the downloads use when it cannot be reached. */
async function hubGet(url: string, env: NodeJS.ProcessEnv, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  const timeout = AbortSignal.timeout(HUB_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetch(url, { headers: { ...hfAuthHeaders(env), ...headers }, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (err) {
    if (signal?.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const code = timeout.aborted ? "ETIMEDOUT" : cause?.code;
    const host = hostOf(url);
    throw new HubError(unreachableMessage(host, code) ?? `Could not reach ${host}: ${cause?.message ?? (err as Error).message}.`, "unreachable");
  }
  if (res.status === 404 || res.status === 401) {
    await res.body?.cancel();
    throw new HubError(
      `Hugging Face has no such repository (or it is private or gated): ${url.replace(/^.*\/api\/models\//, "").split("/tree/")[0]}`,
      "not-found",
    );
  }
  if (!res.ok && res.status !== 206) {
    await res.body?.cancel();
    throw new HubError(`Hugging Face answered ${res.status} ${res.statusText} for ${url}`, "http");
  }
  return res;
}

/** Repositories with GGUF files matching `query`, most downloaded first. */
export async function searchGgufRepos(query: string, opts: { env?: NodeJS.ProcessEnv; limit?: number; signal?: AbortSignal } = {}): Promise<HubRepo[]> {
  const env = opts.env ?? process.env;
  const params = new URLSearchParams({ search: query, filter: "gguf", sort: "downloads", direction: "-1", limit: String(opts.limit ?? 30) });
  const res = await hubGet(`${hfEndpoint(env)}/api/models?${params.toString()}`, env, {}, opts.signal);
  const raw: unknown = await res.json();
  if (!Array.isArray(raw)) throw new HubError("Hugging Face's search answered something that is not a list of models", "http");
  return raw
    .map((r: Record<string, unknown>) => ({
      id: typeof r.id === "string" ? r.id : typeof r.modelId === "string" ? r.modelId : "",
      downloads: typeof r.downloads === "number" ? r.downloads : null,
      likes: typeof r.likes === "number" ? r.likes : null,
      updatedAt: typeof r.lastModified === "string" ? r.lastModified : null,
    }))
    .filter((r) => /^[^/\s]+\/[^/\s]+$/.test(r.id));
}

/** A repository's GGUF files (its main revision), one entry per model: a split model's parts as one, refused. */
export async function listGgufFiles(repo: string, opts: { env?: NodeJS.ProcessEnv; signal?: AbortSignal } = {}): Promise<HubGgufFile[]> {
  if (!/^[^/\s]+\/[^/\s]+$/.test(repo)) throw new HubError(`not a Hugging Face repository: '${repo}' (expected owner/name)`, "not-found");
  const env = opts.env ?? process.env;
  const enc = repo.split("/").map(encodeURIComponent).join("/");
  const res = await hubGet(`${hfEndpoint(env)}/api/models/${enc}/tree/main?recursive=true`, env, {}, opts.signal);
  const raw: unknown = await res.json();
  if (!Array.isArray(raw)) throw new HubError(`Hugging Face's file list of ${repo} is not a list`, "http");
  const files = (raw as RawTreeEntry[])
    .filter((e) => e.type === "file" && typeof e.path === "string" && e.path.toLowerCase().endsWith(".gguf"))
    .map((e) => ({ path: e.path!, size: e.lfs?.size ?? e.size ?? 0 }));
  const out: HubGgufFile[] = [];
  const splits = new Map<string, { first: string; size: number; of: number; seen: number }>();
  for (const f of files) {
    const split = splitPartOf(f.path);
    if (split) {
      const key = f.path.replace(SPLIT_RE, "");
      const s = splits.get(key) ?? { first: "", size: 0, of: split.of, seen: 0 };
      s.size += f.size;
      s.seen++;
      if (split.part === 1) s.first = f.path;
      splits.set(key, s);
      continue;
    }
    const projector = /(^|\/)mmproj/i.test(f.path);
    out.push({
      file: f.path,
      quantization: quantizationOfName(f.path),
      sizeBytes: f.size,
      parts: 1,
      refused: projector ? "A vision projector (mmproj), not a model to chat with: it goes beside a vision model, which ClawRL does not serve." : null,
    });
  }
  for (const [key, s] of splits) {
    out.push({
      file: s.first || `${key}-00001-of-${String(s.of).padStart(5, "0")}.gguf`,
      quantization: quantizationOfName(key),
      sizeBytes: s.size,
      parts: s.of,
      refused: `Split into ${s.of} files: ClawRL downloads single-file models only (llama.cpp's gguf-split --merge joins them into one file you can import).`,
    });
  }
  return out.sort((a, b) => a.sizeBytes - b.sizeBytes || a.file.localeCompare(b.file));
}

/** Header bytes asked for first; doubled while the header runs past them, up to the cap. */
const HEADER_FIRST_BYTES = 4 * 2 ** 20;
const HEADER_MAX_BYTES = 64 * 2 ** 20;

/**
 * A remote GGUF's header (metadata and tensor infos, no weights) read with HTTP Range requests:
 * the bytes are written at the start of a sparse file of the model's full size, so the reader
 * checks the tensor table against the real size; read again with more bytes while the header
 * runs past those fetched. Throws HubError, or the reader's GgufError for a file that is no GGUF.
 */
export async function readRemoteGgufHeader(
  repo: string,
  file: string,
  sizeBytes: number,
  opts: { env?: NodeJS.ProcessEnv; signal?: AbortSignal; revision?: string } = {},
): Promise<GgufFile> {
  const env = opts.env ?? process.env;
  const encFile = file.split("/").map(encodeURIComponent).join("/");
  const url = `${hfEndpoint(env)}/${repo}/resolve/${encodeURIComponent(opts.revision ?? "main")}/${encFile}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clawrl-header-"));
  const tmp = path.join(dir, "header.gguf");
  try {
    for (let want = Math.min(HEADER_FIRST_BYTES, sizeBytes); ; want = Math.min(want * 2, sizeBytes, HEADER_MAX_BYTES)) {
      const bytes = await fetchPrefix(url, want, env, opts.signal);
      fs.writeFileSync(tmp, bytes);
      fs.truncateSync(tmp, Math.max(sizeBytes, bytes.length));
      let gguf: GgufFile | null = null;
      let failure: Error | null = null;
      try {
        gguf = readGguf(tmp);
      } catch (err) {
        failure = err as Error;
      }
      // The header ended inside the bytes fetched: what was read is real (past them lie zeros).
      if (gguf && gguf.tensorDataOffset <= bytes.length) return { ...gguf, path: `${repo}/${file}` };
      if (bytes.length >= sizeBytes || want >= HEADER_MAX_BYTES) {
        if (failure) throw failure;
        throw new HubError(`the header of ${repo}/${file} is larger than ${HEADER_MAX_BYTES / 2 ** 20} MiB`, "http");
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The first `n` bytes of `url` (a Range request; a server that ignores Range is read only that far). */
async function fetchPrefix(url: string, n: number, env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<Buffer> {
  const res = await hubGet(url, env, { range: `bytes=0-${n - 1}` }, signal);
  const chunks: Buffer[] = [];
  let got = 0;
  const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  while (got < n) {
    const next = await reader.read();
    if (next.done) break;
    chunks.push(Buffer.from(next.value));
    got += next.value.length;
  }
  if (got >= n) await reader.cancel();
  return Buffer.concat(chunks).subarray(0, n);
}

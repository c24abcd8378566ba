import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeFile {
  body: Buffer;
  /** Published as X-Linked-Etag (defaults to the body's real sha256). */
  sha256?: string;
  contentType?: string;
}

export interface FakeHubOptions {
  files: Record<string, FakeFile>; // key: "owner/repo/file.gguf"
  /** Ignore Range headers (always answer 200 with the whole file). */
  noRange?: boolean;
  /** Close the connection after this many body bytes, for the first N requests of a file. */
  cutAfterBytes?: number;
  cutTimes?: number;
  /** Send this many body bytes, then hang (never end the response): for cancel tests. */
  stallAfterBytes?: number;
  /**
   * Repositories the search API knows (GET /api/models?search=…&filter=gguf), with their
   * downloads; their file trees (GET /api/models/<repo>/tree/main) list the `files` under them,
   * plus `extraTree` entries (files listed but not served: split parts, a projector).
   */
  repos?: Record<string, { downloads?: number; extraTree?: Array<{ path: string; size: number }> }>;
}

/**
 * A local server with Hugging Face's layout: GET /<owner>/<repo>/resolve/<rev>/<file>
 * answers 302 to /cdn/... with X-Linked-Etag (the LFS sha256) and X-Linked-Size, as the hub does.
 */
export async function startFakeHub(opts: FakeHubOptions) {
  const requests: Array<{ url: string; range?: string; auth?: string }> = [];
  const cuts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? "/";
    requests.push({ url, range: req.headers.range, auth: req.headers.authorization });
    const api = new URL(url, "http://hub");
    if (api.pathname === "/api/models") {
      const q = (api.searchParams.get("search") ?? "").toLowerCase();
      const gguf = api.searchParams.get("filter") === "gguf";
      const found = Object.entries(opts.repos ?? {})
        .filter(([id]) => gguf && id.toLowerCase().includes(q))
        .map(([id, r]) => ({ id, modelId: id, downloads: r.downloads ?? 0, likes: 1, lastModified: "2026-11-01T00:00:00.000Z", tags: ["gguf"] }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(found));
      return;
    }
    const tree = /^\/api\/models\/([^/]+)\/([^/]+)\/tree\/main$/.exec(api.pathname);
    if (tree) {
      const repo = `${decodeURIComponent(tree[1])}/${decodeURIComponent(tree[2])}`;
      const r = opts.repos?.[repo];
      if (!r) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Repository not found"}');
        return;
      }
      const entries = [
        { type: "file", path: ".gitattributes", size: 1519 },
        ...Object.entries(opts.files)
          .filter(([key]) => key.startsWith(`${repo}/`))
          .map(([key, f]) => ({ type: "file", path: key.slice(repo.length + 1), size: 134, lfs: { oid: "x", size: f.body.length, pointerSize: 134 } })),
        ...(r.extraTree ?? []).map((e) => ({ type: "file", path: e.path, size: 134, lfs: { oid: "x", size: e.size, pointerSize: 134 } })),
      ];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(entries));
      return;
    }
    const m = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url);
    if (m) {
      const key = `${m[1]}/${m[2]}/${decodeURIComponent(m[4])}`;
      const f = opts.files[key];
      if (!f) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Entry not found"}');
        return;
      }
      const sha = f.sha256 ?? crypto.createHash("sha256").update(f.body).digest("hex");
      res.writeHead(302, { location: `/cdn/${encodeURIComponent(key)}`, "x-linked-etag": `"${sha}"`, "x-linked-size": String(f.body.length) }).end();
      return;
    }
    const c = /^\/cdn\/(.+)$/.exec(url);
    const key = c ? decodeURIComponent(c[1]) : "";
    const f = opts.files[key];
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    let start = 0;
    let end = f.body.length; // exclusive
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    if (range && !opts.noRange) {
      start = Number(range[1]);
      if (range[2]) end = Math.min(end, Number(range[2]) + 1);
      if (start >= f.body.length) {
        res.writeHead(416, { "content-range": `bytes */${f.body.length}` }).end();
        return;
      }
    }
    const slice = f.body.subarray(start, end);
    const headers: Record<string, string> = {
      "content-type": f.contentType ?? "application/octet-stream",
      "content-length": String(slice.length),
      "accept-ranges": opts.noRange ? "none" : "bytes",
    };
    const partial = start > 0 || end < f.body.length;
    if (partial) headers["content-range"] = `bytes ${start}-${end - 1}/${f.body.length}`;
    res.writeHead(partial ? 206 : 200, headers);
    if (opts.stallAfterBytes !== undefined) {
      res.write(slice.subarray(0, opts.stallAfterBytes));
      return;
    }
    const cutCount = cuts.get(key) ?? 0;
    if (opts.cutAfterBytes !== undefined && cutCount < (opts.cutTimes ?? 1)) {
      cuts.set(key, cutCount + 1);
      res.write(slice.subarray(0, opts.cutAfterBytes), () => res.destroy());
      return;
    }
    res.end(slice);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// The Models page's Hugging Face search against a local hub (HF_ENDPOINT): repositories with GGUF
// files, a repository's files with their quantization, size and verdicts (the catalog's serving
// rule, the trainer's memory plan from a header read over HTTP Range), a chosen file downloaded
// with the usual machinery and used; deleting a model (disk freed, its checkpoints kept; the model
// serving now refused); one display name per file; quantization names parsed from file names.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { listGgufFiles, quantizationOfName, splitPartOf } from "../../models/hfSearch.js";
import { modelDisplayName } from "../../models/registry.js";
import { serveFit, serveMemoryOf, servesHere } from "../../models/catalog.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { tinyModel } from "../helpers/models.js";
import { startFakeHub } from "./hfServer.js";

describe("quantization and split parts from file names", () => {
  it("reads llama.cpp's quantization names", () => {
    const cases: Array<[string, string | null]> = [
      ["qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"],
      ["Llama-3.2-1B-Instruct-Q8_0.gguf", "Q8_0"],
      ["Qwen3-4B-IQ3_XXS.gguf", "IQ3_XXS"],
      ["model.IQ4_NL.gguf", "IQ4_NL"],
      ["Qwen3-0.6B-BF16.gguf", "BF16"],
      ["phi-3-mini.F16.gguf", "F16"],
      ["Qwen3-8B-UD-Q4_K_XL.gguf", "Q4_K_XL"],
      ["gemma-Q6_K.gguf", "Q6_K"],
      ["SmolLM2-135M-Q4_0.gguf", "Q4_0"],
      ["big-Q5_K_S-00001-of-00003.gguf", "Q5_K_S"],
      ["nomic-embed-text-v1.5.gguf", null],
    ];
    for (const [name, q] of cases) assert.equal(quantizationOfName(name), q, name);
    assert.deepEqual(splitPartOf("big-Q5_K_S-00002-of-00003.gguf"), { part: 2, of: 3 });
    assert.equal(splitPartOf("big-Q5_K_S.gguf"), null);
  });

  it("serving fit: one rule for catalog and hub files (60% of RAM plus the GPU's memory)", () => {
    const GiB = 2 ** 30;
    assert.equal(servesHere(5 * GiB, { ramBytes: 8 * GiB, vramBytes: 0 }), false);
    assert.equal(servesHere(4 * GiB, { ramBytes: 8 * GiB, vramBytes: 0 }), true);
    const fit = serveFit(serveMemoryOf(GiB), { ramBytes: 8 * GiB, vramBytes: 0 });
    assert.equal(fit.fits, true);
    assert.ok(fit.needBytes > GiB, "weights plus cache and buffers");
    assert.match(fit.summary, /serves in about/);
  });

  it("one display name per file: the catalog's, else the header's unless it only names the architecture, else the file's", () => {
    assert.equal(modelDisplayName({ name: "anything", architecture: "qwen3", path: "/x/Qwen3-0.6B-Q8_0.gguf" }), "Qwen3 0.6B");
    assert.equal(modelDisplayName({ name: "ClawRL tiny qwen3", architecture: "qwen3", path: "/x/tiny.gguf" }), "ClawRL tiny qwen3");
    assert.equal(modelDisplayName({ name: "llama", architecture: "llama", path: "/x/stories260K.gguf" }), "stories260K");
    assert.equal(modelDisplayName({ path: "/x/some-model.gguf" }), "some-model");
  });
});

/** A model id in a path: each of its segments encoded (an encoded '/' is refused by the server's guard). */
const modelPath = (id: string) => id.split("/").map(encodeURIComponent).join("/");

describe("/api/models/search against a fake Hugging Face", () => {
  let core: RunningCore;
  let hub: Awaited<ReturnType<typeof startFakeHub>>;
  const repo = "acme/Tiny-Qwen3-GGUF";
  const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);
  let q8 = 0;
  let f32 = 0;

  before(async () => {
    const q8Body = fs.readFileSync(await tinyModel({ arch: "qwen3", type: "q8_0" }));
    const f32Body = fs.readFileSync(await tinyModel({ arch: "qwen3" }));
    q8 = q8Body.length;
    f32 = f32Body.length;
    hub = await startFakeHub({
      files: { [`${repo}/Tiny-Qwen3-Q8_0.gguf`]: { body: q8Body }, [`${repo}/Tiny-Qwen3-F32.gguf`]: { body: f32Body } },
      repos: {
        [repo]: {
          downloads: 1234,
          extraTree: [
            { path: "Tiny-Qwen3-F16-00001-of-00002.gguf", size: 4000 },
            { path: "Tiny-Qwen3-F16-00002-of-00002.gguf", size: 3000 },
            { path: "mmproj-Tiny-Qwen3-F16.gguf", size: 500 },
          ],
        },
        "other/Unrelated-GGUF": {},
      },
    });
    process.env.HF_ENDPOINT = hub.endpoint;
    core = await startCore({ dataDir: tempDir(), port: 0 });
  });
  after(async () => {
    delete process.env.HF_ENDPOINT;
    await core.close();
    await hub.close();
  });

  it("finds GGUF repositories by words", async () => {
    const r = await call("GET", "/api/models/search?q=qwen3");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.repos.map((x: { id: string }) => x.id),
      [repo],
    );
    assert.equal(r.body.repos[0].downloads, 1234);
    const bad = await call("GET", "/api/models/search?q=");
    assert.equal(bad.status, 400);
  });

  it("lists a repository's files: quantization, size, serving and learning verdicts; a split model as one refused entry", async () => {
    const r = await call("GET", `/api/models/search/files?repo=${encodeURIComponent(repo)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.architecture, "qwen3");
    assert.equal(r.body.headerNote, null);
    type F = {
      id: string;
      file: string;
      quantization: string | null;
      sizeBytes: number;
      parts: number;
      refused: string | null;
      serve: { fits: boolean };
      training: { fits: boolean } | null;
    };
    const files = r.body.files as F[];
    const byFile = new Map(files.map((f) => [f.file, f]));
    const q = byFile.get("Tiny-Qwen3-Q8_0.gguf")!;
    assert.deepEqual([q.id, q.quantization, q.sizeBytes, q.parts, q.refused], [`hf:${repo}/Tiny-Qwen3-Q8_0.gguf`, "Q8_0", q8, 1, null]);
    assert.equal(q.serve.fits, true);
    assert.equal(q.training?.fits, true, "a tiny qwen3 trains anywhere");
    assert.equal(byFile.get("Tiny-Qwen3-F32.gguf")!.sizeBytes, f32);
    const split = byFile.get("Tiny-Qwen3-F16-00001-of-00002.gguf")!;
    assert.deepEqual([split.quantization, split.sizeBytes, split.parts], ["F16", 7000, 2]);
    assert.match(split.refused!, /Split into 2 files/);
    assert.equal(files.filter((f) => f.file.includes("00002-of")).length, 0, "the second part is not listed on its own");
    assert.match(byFile.get("mmproj-Tiny-Qwen3-F16.gguf")!.refused!, /vision projector/);
    // The header was read with a Range request, not the whole file.
    assert.ok(hub.requests.some((x) => x.range?.startsWith("bytes=0-")));
    const missing = await call("GET", "/api/models/search/files?repo=nobody%2Fnothing");
    assert.equal(missing.status, 404);
  });

  it("downloads a chosen quantization, uses it, and names it the same everywhere", async () => {
    const id = `hf:${repo}/Tiny-Qwen3-Q8_0.gguf`;
    assert.equal((await call("POST", "/api/models/pull", { id })).status, 202);
    for (let i = 0; i < 400; i++) {
      const l = await call("GET", "/api/models");
      if (l.body.installed.some((m: { id: string }) => m.id === id)) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    const files = await call("GET", `/api/models/search/files?repo=${encodeURIComponent(repo)}`);
    assert.equal(files.body.files.find((f: { id: string }) => f.id === id).installed, true);
    const use = await call("POST", "/api/models/use", { id });
    assert.equal(use.status, 200, JSON.stringify(use.body));
    const list = await call("GET", "/api/models");
    const status = await call("GET", "/api/status");
    const installed = list.body.installed.find((m: { id: string }) => m.id === id);
    assert.equal(list.body.active.name, installed.name);
    assert.equal(status.body.model.name, installed.name);
    assert.equal(installed.diskBytes, q8);
    assert.equal(installed.embedding, false);
    assert.equal(installed.checkpoints, 0);
  });

  it("deletes an installed model: refused while it serves; after a switch, frees its file and keeps its checkpoints", async () => {
    const id = `hf:${repo}/Tiny-Qwen3-Q8_0.gguf`;
    const refused = await call("DELETE", `/api/models/${modelPath(id)}`);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, /serving now: switch to another model first/);
    // Serve another one (an import of the same shape), then delete the download.
    const other = path.join(tempDir(), "other-tiny.gguf");
    fs.copyFileSync(await tinyModel({ arch: "qwen3" }), other);
    const imported = await call("POST", "/api/models/import", { path: other });
    assert.equal((await call("POST", "/api/models/use", { id: imported.body.model.id })).status, 200);
    const file = (await call("GET", "/api/models")).body.installed.find((m: { id: string }) => m.id === id).path as string;
    const del = await call("DELETE", `/api/models/${modelPath(id)}`);
    assert.equal(del.status, 200, JSON.stringify(del.body));
    assert.deepEqual([del.body.freedBytes, del.body.fileDeleted, del.body.checkpointsKept], [q8, true, 0]);
    assert.equal(fs.existsSync(file), false);
    assert.equal(
      (await call("GET", "/api/models")).body.installed.some((m: { id: string }) => m.id === id),
      false,
    );
    const again = await call("DELETE", `/api/models/${modelPath(id)}`);
    assert.equal(again.status, 404);
  });

  it("pause, resume and cancel reach a download whose id holds slashes (each segment encoded)", async () => {
    const id = `hf:${repo}/No-Such-Q4_K_M.gguf`;
    for (const action of ["pause", "resume", "cancel"]) {
      const r = await call("POST", `/api/models/${modelPath(id)}/${action}`);
      assert.equal(r.status, 404, JSON.stringify(r.body));
      assert.equal(r.body.error.message, `no download of '${id}'`);
    }
    assert.equal((await call("POST", `/api/models/${modelPath(id)}/explode`)).status, 404);
  });

  it("offline: the plain sentence the downloads use", async () => {
    // A port nothing listens on: a server opened and closed again.
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const saved = process.env.HF_ENDPOINT;
    process.env.HF_ENDPOINT = `http://127.0.0.1:${port}`;
    try {
      const r = await call("GET", "/api/models/search?q=qwen");
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(
        r.body.error.message,
        `Could not reach 127.0.0.1:${port}: the connection was refused. Check the connection (or HTTPS_PROXY, HF_ENDPOINT) and retry.`,
      );
    } finally {
      process.env.HF_ENDPOINT = saved;
    }
    // listGgufFiles itself against a name that does not resolve says offline.
    await assert.rejects(listGgufFiles("a/b", { env: { HF_ENDPOINT: "http://no-such-host.invalid" } }), /You seem to be offline|Could not reach/);
  });
});

describe("one display name per file, however it was loaded", () => {
  it("a file served by path (clawrl serve --model) and the same file imported have one name in /api/status and /api/models", async () => {
    const file = path.join(tempDir(), "tiny.gguf");
    fs.copyFileSync(await tinyModel({ arch: "qwen3" }), file);
    const core = await startCore({ dataDir: tempDir(), port: 0, model: file });
    try {
      const call = (method: string, route: string, body?: unknown) => callApi(core, method, route, body);
      const served = (await call("GET", "/api/status")).body.model.name as string;
      assert.notEqual(served, "tiny", "the header's name, not the file's, when the header has one");
      assert.equal((await call("GET", "/api/models")).body.active.name, served);
      const imported = await call("POST", "/api/models/import", { path: file });
      assert.equal(imported.body.model.name, served);
      const list = await call("GET", "/api/models");
      assert.equal(list.body.installed[0].name, served);
      assert.equal((await call("GET", "/api/status")).body.model.name, served);
    } finally {
      await core.close();
    }
  });
});

import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { downloadFile, DownloadError, type DownloadProgress } from "../../models/downloader.js";
import { pullModel } from "../../models/pull.js";
import { ModelRegistry } from "../../models/registry.js";
import { runCliAsync, storiesModelPath, tempDir } from "../helpers/cli.js";
import { startFakeHub } from "./hfServer.js";

const stories = storiesModelPath();
const gguf = stories ? fs.readFileSync(stories) : Buffer.alloc(0);
const sha = (b: Buffer) => crypto.createHash("sha256").update(b).digest("hex");
const KEY = "acme/tiny-GGUF/stories.gguf";

async function expectDownloadError(p: Promise<unknown>, kind: DownloadError["kind"], re: RegExp) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof DownloadError, `expected DownloadError, got ${String(err)}`);
    assert.equal(err.kind, kind);
    assert.match(err.message, re);
    return true;
  });
}

describe("an unreachable host fails within seconds, in plain words (issue 32)", () => {
  it("a refused connection and a name that does not resolve: the app's default retries, under 15 s", async () => {
    const net = await import("node:net");
    // A port that refuses: bind one, note it, close it.
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    for (const [url, re] of [
      [`http://127.0.0.1:${port}/acme/x/resolve/main/m.gguf`, /^Could not reach 127\.0\.0\.1:\d+: the connection was refused\. .*retry\.$/],
      ["http://hf.invalid/acme/x/resolve/main/m.gguf", /^You seem to be offline: could not reach hf\.invalid/],
    ] as const) {
      const t0 = Date.now();
      await expectDownloadError(downloadFile({ url, dest: path.join(tempDir(), "m.gguf") }), "unreachable", re);
      assert.ok(Date.now() - t0 < 15_000, `${url}: ${Date.now() - t0} ms`);
    }
  });
});

describe("model downloader against a Hugging Face-layout server", () => {
  it("downloads a whole file, verifies the hub's published sha256 and reports progress", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } } });
    try {
      const dir = tempDir();
      const registry = new ModelRegistry(dir);
      const progress: DownloadProgress[] = [];
      const m = await pullModel(registry, `hf:${KEY.replace(/\/stories/, "/stories")}`, {
        env: { HF_ENDPOINT: hub.endpoint, HF_TOKEN: "hf_secret" },
        onProgress: (p) => progress.push(p),
      });
      assert.equal(m.sha256, sha(gguf));
      assert.equal(m.architecture, "llama");
      assert.equal(m.trainable, true);
      assert.deepEqual(fs.readFileSync(m.path), gguf);
      assert.equal(fs.existsSync(`${m.path}.part`), false);
      assert.ok(progress.length > 0);
      const last = progress[progress.length - 1];
      assert.equal(last.receivedBytes, gguf.length);
      assert.equal(last.totalBytes, gguf.length);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].receivedBytes >= progress[i - 1].receivedBytes);
      // HF_TOKEN goes to the hub, not to the CDN hop.
      assert.equal(hub.requests[0].auth, "Bearer hf_secret");
      assert.equal(registry.list().length, 1);
    } finally {
      await hub.close();
    }
  });

  it("resumes an interrupted download from where it stopped (HTTP Range)", async () => {
    const cut = 400_000;
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } }, cutAfterBytes: cut, cutTimes: 1 });
    try {
      const dest = path.join(tempDir(), "m.gguf");
      const url = `${hub.endpoint}/acme/tiny-GGUF/resolve/main/stories.gguf`;
      // First run: no retries, so the cut surfaces and the partial file stays.
      await expectDownloadError(downloadFile({ url, dest, retries: 0 }), "truncated", /closed early|interrupted/);
      const partSize = fs.statSync(`${dest}.part`).size;
      assert.ok(partSize > 0 && partSize <= cut, `part has ${partSize} bytes`);
      assert.equal(fs.existsSync(dest), false, "no half file in place");
      const progress: DownloadProgress[] = [];
      const r = await downloadFile({ url, dest, retries: 0, onProgress: (p) => progress.push(p) });
      assert.equal(r.sha256, sha(gguf));
      assert.equal(r.verifiedAgainst, "server");
      assert.deepEqual(fs.readFileSync(dest), gguf);
      const cdnRequests = hub.requests.filter((q) => q.url.startsWith("/cdn/"));
      assert.equal(cdnRequests.at(-1)?.range, `bytes=${partSize}-`);
      assert.ok(progress.every((p) => p.resumed));
    } finally {
      await hub.close();
    }
  });

  it("retries with back-off on its own and finishes after two cuts", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } }, cutAfterBytes: 100_000, cutTimes: 2 });
    try {
      const dest = path.join(tempDir(), "m.gguf");
      const r = await downloadFile({ url: `${hub.endpoint}/acme/tiny-GGUF/resolve/main/stories.gguf`, dest, retries: 3, backoffMs: 10 });
      assert.equal(r.sha256, sha(gguf));
      assert.equal(hub.requests.filter((q) => q.url.startsWith("/cdn/")).length, 3);
    } finally {
      await hub.close();
    }
  });

  it("restarts from zero when the server does not support Range", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } }, noRange: true });
    try {
      const dest = path.join(tempDir(), "m.gguf");
      const url = `${hub.endpoint}/acme/tiny-GGUF/resolve/main/stories.gguf`;
      // A stale partial file of the same URL, with wrong bytes: must not end up in the result.
      fs.writeFileSync(`${dest}.part`, Buffer.alloc(5000, 7));
      fs.writeFileSync(`${dest}.part.json`, JSON.stringify({ url, sha256: null, totalBytes: gguf.length }));
      const r = await downloadFile({ url, dest, retries: 0 });
      assert.equal(r.sha256, sha(gguf));
      assert.deepEqual(fs.readFileSync(dest), gguf);
    } finally {
      await hub.close();
    }
  });

  it("refuses a checksum mismatch and keeps no file", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf, sha256: "0".repeat(64) } } });
    try {
      const dest = path.join(tempDir(), "m.gguf");
      const url = `${hub.endpoint}/acme/tiny-GGUF/resolve/main/stories.gguf`;
      await expectDownloadError(downloadFile({ url, dest, retries: 0 }), "checksum", /checksum mismatch/);
      assert.equal(fs.existsSync(dest), false);
      assert.equal(fs.existsSync(`${dest}.part`), false);
      // A catalog hash that disagrees with the hub's is refused before downloading.
      await expectDownloadError(downloadFile({ url, dest, sha256: "1".repeat(64), retries: 0 }), "checksum", /catalog expects/);
    } finally {
      await hub.close();
    }
  });

  it("refuses an HTML page, a non-GGUF file and a missing file with clear messages", async () => {
    const junk = crypto.randomBytes(5000);
    const hub = await startFakeHub({
      files: {
        "acme/r/login.gguf": { body: Buffer.from("<html>please log in</html>"), contentType: "text/html; charset=utf-8" },
        "acme/r/junk.gguf": { body: junk },
      },
    });
    try {
      const dir = tempDir();
      const registry = new ModelRegistry(dir);
      const env = { HF_ENDPOINT: hub.endpoint };
      await assert.rejects(pullModel(registry, "hf:acme/r/login.gguf", { env, retries: 0 }), /web page instead of the file/);
      await assert.rejects(pullModel(registry, "hf:acme/r/junk.gguf", { env, retries: 0 }), /not usable: .*junk\.gguf\.part/);
      await assert.rejects(pullModel(registry, "hf:acme/r/none.gguf", { env, retries: 0 }), /HTTP 404 .*no such repository or file/);
      assert.deepEqual(
        fs.readdirSync(dir).filter((f) => f.endsWith(".gguf") || f.endsWith(".part")),
        [],
      );
      assert.equal(registry.list().length, 0);
    } finally {
      await hub.close();
    }
  });

  it("cancels on abort and keeps the partial file for a later resume", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } }, stallAfterBytes: 300_000 });
    try {
      const dest = path.join(tempDir(), "m.gguf");
      const ac = new AbortController();
      const p = downloadFile({
        url: `${hub.endpoint}/acme/tiny-GGUF/resolve/main/stories.gguf`,
        dest,
        signal: ac.signal,
        onProgress: (pr) => {
          if (pr.receivedBytes > 0) ac.abort();
        },
      });
      await expectDownloadError(p, "cancelled", /cancelled/);
      assert.equal(fs.existsSync(dest), false);
      assert.ok(fs.statSync(`${dest}.part`).size > 0);
    } finally {
      await hub.close();
    }
  });

  it("clawrl models pull/list/use/remove work end to end", async () => {
    const hub = await startFakeHub({ files: { [KEY]: { body: gguf } } });
    try {
      const dataDir = tempDir();
      const env = { HF_ENDPOINT: hub.endpoint };
      const pull = await runCliAsync(["models", "pull", `hf:${KEY}`, "--data-dir", dataDir], env);
      assert.equal(pull.code, 0, pull.stderr);
      assert.match(pull.stdout, new RegExp(`sha256 ${sha(gguf)}`));
      assert.match(pull.stderr, /100\.0%/);
      const list = await runCliAsync(["models", "list", "--data-dir", dataDir], env);
      assert.match(list.stdout, /hf:acme\/tiny-GGUF\/stories\.gguf\s+llama/);
      // Whether each model trains here, from the trainer's memory plan: stories260K fits anywhere.
      assert.match(list.stdout, /stories\.gguf\s+llama\s+[\d.]+ [KM]B\s+trains: yes \(wasm, resident, ctx \d+\)/);
      assert.match(list.stdout, /qwen3-4b\s.*\s(trains: yes \(wasm, streamed, ctx \d+\)|trains: no \(needs [\d.]+ GiB (RAM|wasm memory), [\d.]+ available\))/);
      assert.match(list.stdout, /Recommended for this machine: \S+/);
      // A trainer kept to 100 MiB of RAM trains nothing, and the list says what is short.
      const starved = await runCliAsync(["models", "list", "--data-dir", dataDir], { ...env, CLAWRL_TRAINER_RAM_LIMIT: "100M" });
      assert.match(starved.stdout, /stories\.gguf\s+llama\s+[\d.]+ [KM]B\s+trains: no \(needs [\d.]+ GiB RAM, 0\.1 available\)/);
      assert.match(starved.stdout, /with 0\.1 GiB of RAM available \(CLAWRL_TRAINER_RAM_LIMIT\)/);
      assert.equal((await runCliAsync(["models", "use", `hf:${KEY}`, "--data-dir", dataDir])).code, 0);
      assert.equal(new ModelRegistry(path.join(dataDir, "models")).active()?.id, `hf:${KEY}`);
      const rm = await runCliAsync(["models", "remove", `hf:${KEY}`, "--data-dir", dataDir]);
      assert.equal(rm.code, 0);
      assert.equal(fs.existsSync(path.join(dataDir, "models", "stories.gguf")), false);
      const bad = await runCliAsync(["models", "pull", "no-such-model", "--data-dir", dataDir], env);
      assert.equal(bad.code, 1);
      assert.equal(bad.stderr.trim().split("\n").length, 1);
      assert.match(bad.stderr, /unknown model 'no-such-model'/);
    } finally {
      await hub.close();
    }
  });
});

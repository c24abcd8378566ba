import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { tempDir } from "../helpers/cli.js";

describe("core server security", () => {
  let core: RunningCore;
  let dataDir: string;
  before(async () => {
    dataDir = tempDir();
    core = await startCore({ dataDir, port: 0 });
  });
  after(() => core.close());

  it("binds 127.0.0.1 by default", () => {
    assert.match(core.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("stores a generated token owner-only and reuses it on restart", async () => {
    const file = path.join(dataDir, "token");
    assert.equal(fs.readFileSync(file, "utf8").trim(), core.token);
    if (process.platform !== "win32") assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const again = await startCore({ dataDir, port: 0 });
    try {
      assert.equal(again.token, core.token);
    } finally {
      await again.close();
    }
  });

  it("answers /healthz without a token", async () => {
    const r = await fetch(`${core.url}/healthz`);
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { ok: true });
  });

  it("refuses API routes without the right bearer token, OpenAI-style", async () => {
    for (const auth of [undefined, "Bearer wrong-token-wrong-token", `Basic ${core.token}`]) {
      const r = await fetch(`${core.url}/v1/models`, { headers: auth ? { authorization: auth } : {} });
      assert.equal(r.status, 401);
      const body = (await r.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, "invalid_api_key");
    }
  });

  it("answers unknown routes with a JSON 404 once authorized", async () => {
    const r = await fetch(`${core.url}/api/nope`, { headers: { authorization: `Bearer ${core.token}` } });
    assert.equal(r.status, 404);
    const body = (await r.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, /\/api\/nope/);
  });
});

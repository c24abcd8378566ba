/**
 * The small holes of issue 26 (F5, F9): deep JSON is a 400, not a stack overflow's 500; one
 * session-id length everywhere; Fastify's own errors in the API's shape; imports take absolute
 * paths only and say nothing about files they refuse to read.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { RunningCore } from "../../electron/core/core.js";
import { jsonTextDepth } from "../../electron/core/server/jsonDepth.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { startTinyCore } from "../openai/helpers.js";

describe("request limits", () => {
  let core: RunningCore;
  before(async () => {
    ({ core } = await startTinyCore());
  });
  after(() => core.close());

  const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${core.url}${route}`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  it("measures JSON nesting outside strings", () => {
    assert.equal(jsonTextDepth('{"a":[1,{"b":"[[[["}]}'), 3);
    assert.equal(jsonTextDepth('"\\"[["'), 0);
    assert.equal(jsonTextDepth("[".repeat(100), 10), 11, "stops early past the limit");
  });

  it("answers tool-call arguments nested 5,000 deep with a 400 naming the field, and keeps serving", async () => {
    const args = "[".repeat(5000) + "]".repeat(5000);
    const body = {
      max_tokens: 4,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: args } }] },
        { role: "tool", tool_call_id: "c1", content: "ok" },
      ],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    };
    const r = await post("/v1/chat/completions", body);
    assert.equal(r.status, 400);
    const e = (await r.json()) as { error: { code: string; param: string } };
    assert.equal(e.error.code, "nested_too_deep");
    assert.equal(e.error.param, "messages.1.tool_calls.0.function.arguments");
    // A body nested past the limit itself.
    const deep = await post("/v1/chat/completions", `{"messages":${"[".repeat(3000)}${"]".repeat(3000)}}`);
    assert.equal(deep.status, 400);
    assert.equal(((await deep.json()) as { error: { code: string } }).error.code, "nested_too_deep");
    const ok = await post("/v1/chat/completions", { max_tokens: 2, messages: [{ role: "user", content: "hi" }] });
    assert.equal(ok.status, 200);
  });

  it("takes the same session ids on the header and on /api/sessions/:id (256 characters), and answers longer ones in the API's shape", async () => {
    const id = `s-${"x".repeat(254)}`;
    const r = await post("/v1/chat/completions", { max_tokens: 2, messages: [{ role: "user", content: "hi" }] }, { "x-session-id": id });
    assert.equal(r.status, 200);
    const got = await callApi(core, "GET", `/api/sessions/${encodeURIComponent(id)}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.session.id, id);
    const long = "y".repeat(300);
    const refused = await post("/v1/chat/completions", { max_tokens: 2, messages: [{ role: "user", content: "hi" }] }, { "x-session-id": long });
    assert.equal(refused.status, 400);
    for (const p of [long, "z".repeat(5000)]) {
      const res = await callApi(core, "GET", `/api/sessions/${p}`);
      assert.ok(res.status === 404 || res.status === 414, `${res.status}`);
      assert.equal(res.body.error.type, "invalid_request_error");
      assert.equal(typeof res.body.error.message, "string");
    }
    const slash = await post("/v1/chat/completions", { max_tokens: 2, messages: [{ role: "user", content: "hi" }] }, { "x-session-id": "a/b" });
    assert.equal(slash.status, 400, "a session id is a path segment: no '/'");
  });

  it("imports models from absolute paths only, and says the same of a missing file and a file that is not a model", async () => {
    const rel = await callApi(core, "POST", "/api/models/import", { path: "models/x.gguf" });
    assert.equal(rel.status, 400);
    assert.match(rel.body.error.message, /absolute path/);
    const dir = tempDir();
    const text = path.join(dir, "notes.txt");
    fs.writeFileSync(text, "secret notes");
    const missing = path.join(dir, "missing.gguf");
    const a = await callApi(core, "POST", "/api/models/import", { path: text });
    const b = await callApi(core, "POST", "/api/models/import", { path: missing });
    const c = await callApi(core, "POST", "/api/models/import", { path: dir });
    assert.equal(a.status, b.status);
    assert.equal(a.status, c.status);
    const shape = (r: { body: { error: { message: string } } }, p: string) => r.body.error.message.replace(p, "<path>");
    assert.equal(shape(a, text), shape(b, missing));
    assert.equal(shape(a, text), shape(c, dir));
    assert.ok(!/secret notes|ENOENT|EISDIR|magic/i.test(JSON.stringify([a.body, b.body, c.body])));
  });

  it("answers Fastify's own refusals in the API's error shape", async () => {
    const bad = await post("/v1/chat/completions", "{not json");
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, "invalid_json");
    const media = await fetch(`${core.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${core.token}`, "content-type": "application/xml" },
      body: "<hello/>",
    });
    assert.equal(media.status, 415);
    assert.equal(((await media.json()) as { error: { code: string } }).error.code, "unsupported_media_type");
  });
});

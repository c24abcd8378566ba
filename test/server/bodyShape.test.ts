import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { routeTable, type RouteEntry } from "../../electron/core/server/app.js";
import { tempDir } from "../helpers/cli.js";

/**
 * Routes that take no body (a body sent is ignored): they are only checked for Fastify's answer to
 * malformed JSON. Every other POST/PUT/PATCH route reads its body through the one parser
 * (server/errors.ts parseBody), so a new route with a body is covered without being listed.
 */
const BODYLESS = new Set([
  "POST /api/training/run",
  "POST /api/training/pause",
  "POST /api/training/resume",
  "POST /api/checkpoints/:n/activate",
  "POST /api/preferences/:id/undo",
  "POST /api/preferences/:id/restore",
  "POST /api/preferences/check",
  "POST /api/models/:id/pause",
  "POST /api/models/:id/resume",
  "POST /api/models/:id/cancel",
  // pause, resume and cancel of a download whose id holds slashes (/api/models/<id>/<action>)
  "POST /api/models/*",
]);

/** A path for a route: parameters named x1, a wildcard as the route's handler reads it (an id, then the action or the load settings). */
function pathOf(r: RouteEntry): string {
  const wild = r.method === "POST" ? "x1/pause" : "x1/load-settings";
  return r.url.replace(/:[A-Za-z_]+/g, "x1").replace(/\*$/, wild);
}

const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/** The API's error shape, exactly: `{error: {message, type, param, code}}`. */
function assertErrorShape(body: unknown, where: string): { message: string; type: string; param: string | null; code: string | null } {
  assert.ok(body && typeof body === "object", where);
  assert.deepEqual(Object.keys(body), ["error"], where);
  const e = (body as { error: Record<string, unknown> }).error;
  assert.deepEqual(Object.keys(e).sort(), ["code", "message", "param", "type"], where);
  assert.equal(typeof e.message, "string", where);
  assert.equal(e.type, "invalid_request_error", where);
  assert.ok(e.param === null || typeof e.param === "string", where);
  assert.ok(e.code === null || typeof e.code === "string", where);
  return e as { message: string; type: string; param: string | null; code: string | null };
}

describe("every route answers a malformed or wrong-typed body in the one error shape (issue 27)", () => {
  let core: RunningCore;
  let routes: RouteEntry[];
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0, token: "t" });
    routes = routeTable(core.server).filter((r) => WITH_BODY.has(r.method));
  });
  after(async () => {
    await core.close();
  });

  const send = async (r: RouteEntry, body: string) => {
    const res = await fetch(`${core.url}${pathOf(r)}`, {
      method: r.method,
      headers: { authorization: "Bearer t", "content-type": "application/json" },
      body,
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
  };

  it("finds the routes that take a body", () => {
    const urls = routes.map((r) => `${r.method} ${r.url}`);
    for (const must of [
      "POST /v1/chat/completions",
      "POST /v1/completions",
      "POST /v1/responses",
      "POST /v1/embeddings",
      "POST /api/feedback",
      "PATCH /api/settings",
      "POST /api/preferences",
      "POST /api/models/pull",
      "POST /api/tools/call",
    ])
      assert.ok(urls.includes(must), `${must} is registered`);
    for (const listed of BODYLESS) assert.ok(urls.includes(listed), `${listed} (listed as bodyless) is still a route`);
  });

  it("malformed JSON: 400 invalid_json on every route", async () => {
    for (const r of routes) {
      const where = `${r.method} ${r.url}`;
      const res = await send(r, '{"x":');
      assert.equal(res.status, 400, where);
      assert.equal(assertErrorShape(res.body, where).code, "invalid_json", where);
    }
  });

  it("a body that is not a JSON object: 400 invalid_request, the same message on every route that takes a body", async () => {
    for (const r of routes.filter((r) => !BODYLESS.has(`${r.method} ${r.url}`))) {
      for (const body of ["[1,2]", '"text"', "42"]) {
        const where = `${r.method} ${r.url} ${body}`;
        const res = await send(r, body);
        assert.equal(res.status, 400, `${where}: ${JSON.stringify(res.body)}`);
        const e = assertErrorShape(res.body, where);
        assert.deepEqual([e.message, e.code, e.param], ["The request body must be a JSON object.", "invalid_request", null], where);
      }
    }
  });

  it("a field of the wrong type: 400 naming the field, in one format", async () => {
    const cases: Array<[RouteEntry, string, string]> = [
      [{ method: "POST", url: "/v1/chat/completions", public: false }, JSON.stringify({ messages: "hi" }), "messages"],
      [{ method: "POST", url: "/v1/completions", public: false }, JSON.stringify({ prompt: "hi", max_tokens: "many" }), "max_tokens"],
      [{ method: "POST", url: "/v1/responses", public: false }, JSON.stringify({ input: "hi", temperature: "hot" }), "temperature"],
      [{ method: "POST", url: "/v1/embeddings", public: false }, JSON.stringify({ input: 7 }), "input"],
      [{ method: "POST", url: "/api/feedback", public: false }, JSON.stringify({ turnId: 7, thumbs: "up" }), "turnId"],
      [{ method: "POST", url: "/api/preferences", public: false }, JSON.stringify({ text: 7 }), "text"],
      [{ method: "POST", url: "/api/models/pull", public: false }, JSON.stringify({ id: 7 }), "id"],
      [{ method: "POST", url: "/api/tools/call", public: false }, JSON.stringify({ name: 7, arguments: {} }), "name"],
    ];
    for (const [r, body, field] of cases) {
      const where = `${r.method} ${r.url} ${body}`;
      const res = await send(r, body);
      assert.equal(res.status, 400, `${where}: ${JSON.stringify(res.body)}`);
      const e = assertErrorShape(res.body, where);
      assert.equal(e.param, field, where);
      assert.equal(e.code, "invalid_value", where);
      assert.match(e.message, new RegExp(`^Invalid '${field}': `), where);
    }
  });
});

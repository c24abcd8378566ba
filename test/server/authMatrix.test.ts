import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { routeTable, type RouteEntry } from "../../electron/core/server/app.js";
import { nonCanonicalPathReason } from "../../electron/core/server/requestGuard.js";
import { tempDir } from "../helpers/cli.js";

/** One request with the path sent exactly as given (fetch would normalise dot segments). */
function raw(
  core: RunningCore,
  method: string,
  rawPath: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; text: string }> {
  const u = new URL(core.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: rawPath, headers, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** A concrete path for a route pattern: parameters filled in, the static wildcard a file. */
function concrete(url: string): string {
  return url.replace(/:[A-Za-z_]+/g, "x1").replace(/\*$/, "index.html");
}

/** Other spellings of a path, each of which some router or proxy might map back to it. */
function spellings(p: string): string[] {
  const out = new Set<string>();
  for (let i = 1; i < p.length; i++) {
    const ch = p[i];
    if (!/[A-Za-z0-9\-._~]/.test(ch)) continue;
    const hex = ch.charCodeAt(0).toString(16);
    out.add(`${p.slice(0, i)}%${i % 2 ? hex.toLowerCase() : hex.toUpperCase()}${p.slice(i + 1)}`);
  }
  const second = p.indexOf("/", 1);
  if (second > 0) {
    out.add(`${p.slice(0, second)}%2f${p.slice(second + 1)}`);
    out.add(`${p.slice(0, second)}%2F${p.slice(second + 1)}`);
    out.add(`${p.slice(0, second)}/${p.slice(second)}`);
    out.add(`${p.slice(0, second)}/.${p.slice(second)}`);
    out.add(`${p.slice(0, second)}/zz/..${p.slice(second)}`);
    out.add(`${p.slice(0, second)}%5c${p.slice(second + 1)}`);
  }
  out.add(`/${p}`);
  out.add(`${p}/`);
  out.add(p.toUpperCase());
  out.add(`${p[0]}${p[1].toUpperCase()}${p.slice(2)}`);
  out.add(`${p};x=1`);
  out.add(`${p}%00`);
  out.add(`${p}/%2e%2e`);
  out.delete(p);
  return [...out];
}

describe("authentication on the matched route, every route and spelling (issue 26)", () => {
  let core: RunningCore;
  let routes: readonly RouteEntry[];
  before(async () => {
    const uiDir = tempDir("clawrl-ui-");
    fs.writeFileSync(path.join(uiDir, "index.html"), "<!doctype html><title>ui</title>");
    core = await startCore({ dataDir: tempDir(), port: 0, token: "right-token-right-token", uiDir });
    routes = routeTable(core.server);
  });
  after(async () => {
    agent.destroy();
    await core.close();
  });

  it("has a route table with the API's routes, public ones only /healthz and the UI", () => {
    assert.ok(routes.length > 30, `only ${routes.length} routes`);
    for (const needed of ["/api/settings", "/v1/chat/completions", "/api/checkpoints/:n/activate", "/api/events"])
      assert.ok(
        routes.some((r) => r.url === needed),
        `${needed} missing from the table`,
      );
    const pub = [...new Set(routes.filter((r) => r.public).map((r) => r.url))].sort();
    assert.ok(pub.includes("/healthz") && pub.includes("/*"), pub.join(" "));
    assert.deepEqual(
      pub.filter((u) => !["/", "/*", "/healthz"].includes(u)),
      [],
    );
  });

  it("refuses every protected route × {no token, wrong token, token in the query} × every spelling, before any handler", async () => {
    const protectedRoutes = routes.filter((r) => !r.public && r.method !== "HEAD");
    let tried = 0;
    const failures: string[] = [];
    for (const r of protectedRoutes) {
      const plain = concrete(r.url);
      for (const spelling of [plain, ...spellings(plain)]) {
        const auths: [string, string, Record<string, string>][] = [
          ["no token", spelling, {}],
          ["wrong token", spelling, { authorization: "Bearer wrong-token-wrong-token" }],
        ];
        // The SSE route takes ?token= by design, spelled plainly: its other spellings must not.
        if (!(r.url === "/api/events" && spelling === plain)) auths.push(["token in the query", `${spelling}?token=right-token-right-token`, {}]);
        for (const [label, p, headers] of auths) {
          const hasBody = r.method === "POST" || r.method === "PATCH" || r.method === "PUT";
          const res = await raw(core, r.method, p, hasBody ? { ...headers, "content-type": "text/plain" } : headers, hasBody ? "" : undefined);
          tried++;
          const ok = res.status === 401 || (res.status === 404 && res.text.includes("Unknown route"));
          if (!ok) failures.push(`${r.method} ${p} (${label}) → ${res.status} ${res.text.slice(0, 80)}`);
        }
      }
    }
    assert.ok(tried > 3000, `only ${tried} requests`);
    assert.deepEqual(failures, []);
  });

  it("refuses a non-canonical spelling even with the right token (the second wall)", async () => {
    for (const p of ["/%61pi/settings", "/%761/models", "/api//settings", "/api/./settings", "/api/x/../settings", "/api%2fsettings"]) {
      const res = await raw(core, "GET", p, { authorization: "Bearer right-token-right-token" });
      assert.equal(res.status, 404, p);
      assert.match(JSON.parse(res.text).error.message, /Unknown route/);
    }
    const plain = await raw(core, "GET", "/api/settings", { authorization: "Bearer right-token-right-token" });
    assert.equal(plain.status, 200);
  });

  it("the issue's commands change nothing", async () => {
    const before = JSON.stringify(core.store.settings);
    const active = core.store.state.training.activeCheckpoint;
    const attack = JSON.stringify({ judgeSource: { kind: "endpoint", baseUrl: "http://attacker.example/v1", model: "m" } });
    assert.equal((await raw(core, "PATCH", "/%61pi/settings", { "content-type": "application/json" }, attack)).status, 404);
    assert.equal((await raw(core, "POST", "/%61pi/checkpoints/base/activate", { "content-type": "text/plain" }, "")).status, 404);
    assert.equal((await raw(core, "GET", "/%61pi/settings")).status, 404);
    assert.equal(JSON.stringify(core.store.settings), before);
    assert.equal(core.store.state.training.activeCheckpoint, active);
  });

  it("serves the public routes without a token", async () => {
    assert.equal((await raw(core, "GET", "/healthz")).status, 200);
    assert.equal((await raw(core, "GET", "/")).status, 200);
    assert.equal((await raw(core, "GET", "/index.html")).status, 200);
  });

  it("names the reason a path is not canonical", () => {
    assert.equal(nonCanonicalPathReason("/api/settings?x=%61"), null);
    assert.equal(nonCanonicalPathReason("/api/sessions/a%3Ab%20c"), null);
    assert.match(nonCanonicalPathReason("/%61pi")!, /unreserved/);
    assert.match(nonCanonicalPathReason("/api%2Fx")!, /separator/);
    assert.match(nonCanonicalPathReason("/api/%zz")!, /malformed/);
    assert.match(nonCanonicalPathReason("/api/../x")!, /dot segment/);
  });
});

describe("Host and Origin checks (issue 26 F2)", () => {
  let core: RunningCore;
  const auth = { authorization: "Bearer right-token-right-token" };
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0, token: "right-token-right-token", uiDir: "" });
  });
  after(() => core.close());
  const port = () => new URL(core.url).port;

  it("refuses a Host that is not this app, even with the token (DNS rebinding)", async () => {
    for (const host of ["attacker.example", `attacker.example:${port()}`, "127.0.0.1:1", `127.0.0.2:${port()}`, `localhost.attacker.example:${port()}`]) {
      const res = await raw(core, "GET", "/api/settings", { ...auth, host });
      assert.equal(res.status, 403, host);
      assert.equal(JSON.parse(res.text).error.code, "host_not_allowed");
      assert.equal((await raw(core, "GET", "/healthz", { host })).status, 403, `${host} on /healthz`);
    }
    for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, `LOCALHOST:${port()}`]) {
      assert.equal((await raw(core, "GET", "/api/settings", { ...auth, host })).status, 200, host);
    }
  });

  it("answers to a name the user added in the settings", async () => {
    const host = `assistant.lan:${port()}`;
    assert.equal((await raw(core, "GET", "/api/status", { ...auth, host })).status, 403);
    const patch = await raw(
      core,
      "PATCH",
      "/api/settings",
      { ...auth, "content-type": "application/json" },
      JSON.stringify({ allowedHosts: ["assistant.lan"] }),
    );
    assert.equal(patch.status, 200, patch.text);
    assert.equal((await raw(core, "GET", "/api/status", { ...auth, host })).status, 200);
    const bad = await raw(core, "PATCH", "/api/settings", { ...auth, "content-type": "application/json" }, JSON.stringify({ allowedHosts: ["http://x:1/"] }));
    assert.equal(bad.status, 400);
  });

  it("refuses state changes from another origin and cross-site requests, even with the token", async () => {
    const before = core.store.settings.autoLearn;
    const body = JSON.stringify({ autoLearn: !before });
    for (const origin of ["http://attacker.example", "null", `http://127.0.0.1:${Number(port()) + 1}`, `https://127.0.0.1:${port()}`]) {
      const res = await raw(core, "PATCH", "/api/settings", { ...auth, origin, "content-type": "application/json" }, body);
      assert.equal(res.status, 403, origin);
      assert.equal(JSON.parse(res.text).error.code, "cross_origin_refused");
    }
    const crossSite = await raw(core, "GET", "/api/settings", { ...auth, "sec-fetch-site": "cross-site" });
    assert.equal(crossSite.status, 403);
    assert.equal(core.store.settings.autoLearn, before);
    // The app's own page (same origin) and non-browser clients (no Origin) may.
    const own = await raw(
      core,
      "PATCH",
      "/api/settings",
      { ...auth, origin: core.url, "sec-fetch-site": "same-origin", "content-type": "application/json" },
      body,
    );
    assert.equal(own.status, 200, own.text);
    assert.equal(core.store.settings.autoLearn, !before);
  });
});

describe("secrets never leave the core (issue 26)", () => {
  let core: RunningCore;
  const secret = "sk-test-SECRET-value-4242";
  const auth = { authorization: "Bearer right-token-right-token" };
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0, token: "right-token-right-token", uiDir: "" });
  });
  after(() => core.close());

  it("masks the judge's API key on every GET and SSE event, and keeps it when the mask comes back", async () => {
    const events: string[] = [];
    const sse = await fetch(`${core.url}/api/events?token=right-token-right-token`);
    const reader = sse.body!.getReader();
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        events.push(Buffer.from(value).toString("utf8"));
      }
    })().catch(() => undefined);

    const judgeSource = { kind: "endpoint", baseUrl: "http://127.0.0.1:9/v1", model: "m", apiKey: secret };
    const set = await raw(core, "PATCH", "/api/settings", { ...auth, "content-type": "application/json" }, JSON.stringify({ judgeSource }));
    assert.equal(set.status, 200, set.text);
    assert.ok(!set.text.includes(secret));
    const shown = JSON.parse(set.text).judgeSource.apiKey as string;
    assert.equal(shown, "sk-…4242");
    assert.equal(core.store.settings.judgeSource.kind === "endpoint" && core.store.settings.judgeSource.apiKey, secret);

    for (const r of routeTable(core.server).filter((x) => x.method === "GET" && x.url !== "/api/events")) {
      const res = await raw(core, "GET", concrete(r.url), auth);
      assert.ok(!res.text.includes(secret), `GET ${r.url} shows the secret`);
      assert.ok(!res.text.includes("SECRET"), `GET ${r.url} shows part of the secret`);
    }
    // The form sends back what it was shown: the stored key stays.
    const again = await raw(
      core,
      "PATCH",
      "/api/settings",
      { ...auth, "content-type": "application/json" },
      JSON.stringify({ judgeSource: { ...judgeSource, apiKey: shown }, judgeVotes: 5 }),
    );
    assert.equal(again.status, 200, again.text);
    assert.equal(core.store.settings.judgeSource.kind === "endpoint" && core.store.settings.judgeSource.apiKey, secret);
    // A new key replaces it.
    await raw(
      core,
      "PATCH",
      "/api/settings",
      { ...auth, "content-type": "application/json" },
      JSON.stringify({ judgeSource: { ...judgeSource, apiKey: "sk-other-key-0000" } }),
    );
    assert.equal(core.store.settings.judgeSource.kind === "endpoint" && core.store.settings.judgeSource.apiKey, "sk-other-key-0000");

    await new Promise((r) => setTimeout(r, 200));
    await reader.cancel();
    await reading;
    const all = events.join("");
    assert.match(all, /event: settings/);
    assert.ok(!all.includes(secret) && !all.includes("sk-other-key-0000"), "an SSE event carries the secret");
  });
});

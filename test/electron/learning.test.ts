// Tray learning status and pause/resume, against real HTTP servers: a small one answering the
// shapes we need, and the real core.
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import {
  fetchLearningState,
  fetchLearningStatus,
  learningStateFromStatus,
  progressFromStatus,
  revertNoteFromStatus,
  setLearningPaused,
  trayMenuTemplate,
  trayTooltip,
  type TrayActions,
} from "../../electron/main/learning.js";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { tempDir } from "../helpers/cli.js";

describe("learningStateFromStatus", () => {
  const status = (state: string, model: { id: string } | null = { id: "m" }) => ({ model, training: { state, activeCheckpoint: null } });
  it("maps the core's training phases onto the tray's states", () => {
    for (const state of ["starting", "training", "evaluating", "publishing", "restarting"])
      assert.equal(learningStateFromStatus(status(state)), "learning", state);
    assert.equal(learningStateFromStatus(status("paused")), "paused");
    for (const state of ["idle", "waiting"]) assert.equal(learningStateFromStatus(status(state)), "idle", state);
    assert.equal(learningStateFromStatus(status("error")), "off");
  });
  it("says no model is loaded whatever the stored phase, and offers no Pause then", () => {
    assert.equal(learningStateFromStatus(status("waiting", null)), "no-model");
    const menu = trayMenuTemplate("no-model", { showWindow() {}, pause() {}, resume() {}, quit() {} });
    assert.equal(menu[0].label, "Learning: no model loaded");
    assert.deepEqual([menu[3].label, menu[3].enabled], ["Pause learning", false]);
  });
  it("is unknown for bodies that are not a status reply", () => {
    for (const body of [null, 3, "x", {}, { training: {} }, { training: { state: 5 } }, { training: "idle" }, status("exploded")]) {
      assert.equal(learningStateFromStatus(body), "unknown", JSON.stringify(body));
    }
  });
});

describe("revertNoteFromStatus", () => {
  const now = Date.parse("2030-01-02T12:00:00Z");
  it("says in the tray that the learner rolled back by itself, for a day", () => {
    const body = (at: string, to: number | null, rule = "reward") => ({
      training: { state: "idle", lastRevert: { checkpoint: 5, to, at, rule, reason: "…" } },
    });
    assert.equal(revertNoteFromStatus(body("2030-01-02T11:00:00Z", 4), now), "Rolled back ckpt-5 to ckpt-4 (its answers were rated worse)");
    assert.equal(revertNoteFromStatus(body("2030-01-02T11:00:00Z", null, "fluency"), now), "Rolled back ckpt-5 to the base model (its answers read worse)");
    assert.equal(revertNoteFromStatus(body("2029-12-31T11:00:00Z", 4), now), undefined, "older than a day");
    for (const b of [null, {}, { training: { lastRevert: null } }, { training: { lastRevert: { checkpoint: "5" } } }])
      assert.equal(revertNoteFromStatus(b, now), undefined);
    const menu = trayMenuTemplate("idle", { showWindow() {}, pause() {}, resume() {}, quit() {} }, revertNoteFromStatus(body("2030-01-02T11:00:00Z", 4), now));
    assert.equal(menu[1].label, "Rolled back ckpt-5 to ckpt-4 (its answers were rated worse)");
  });
});

describe("progressFromStatus", () => {
  const body = (training: object) => ({ model: { id: "m" }, training: { state: "training", ...training } });
  it("says the step under way and the run's share done, or the gate's", () => {
    assert.equal(progressFromStatus(body({ step: 1, steps: 4, progress: { part: "steps", fraction: 0.456, secondsLeft: 300 } })), "step 2 of 4, 45%");
    assert.equal(
      progressFromStatus(body({ state: "evaluating", step: null, steps: null, progress: { part: "answers", fraction: 0.3, secondsLeft: null } })),
      "checking the new adapter, 30%",
    );
    for (const b of [null, {}, body({ progress: null }), body({})]) assert.equal(progressFromStatus(b), undefined);
  });
  it("becomes the tray's status line while learning, and its tooltip", () => {
    const actions: TrayActions = { showWindow() {}, pause() {}, resume() {}, quit() {} };
    assert.equal(trayMenuTemplate("learning", actions, undefined, "step 2 of 4, 45%")[0].label, "Learning: step 2 of 4, 45%");
    assert.equal(trayTooltip("learning", "step 2 of 4, 45%"), "ClawRL: learning step 2 of 4, 45%");
    assert.equal(trayMenuTemplate("paused", actions, undefined, "step 2 of 4, 45%")[0].label, "Learning: paused");
  });
});

describe("trayMenuTemplate", () => {
  const calls: string[] = [];
  const actions: TrayActions = {
    showWindow: () => calls.push("show"),
    pause: () => calls.push("pause"),
    resume: () => calls.push("resume"),
    quit: () => calls.push("quit"),
  };
  const labels = (state: Parameters<typeof trayMenuTemplate>[0], note?: string) =>
    trayMenuTemplate(state, actions, note).map((i) => (i.type === "separator" ? "---" : `${i.label}${i.enabled === false ? " (disabled)" : ""}`));

  it("shows the status and offers Pause while idle or learning", () => {
    assert.deepEqual(labels("learning"), ["Learning: training… (disabled)", "---", "Open ClawRL", "Pause learning", "---", "Quit ClawRL"]);
    assert.deepEqual(labels("idle")[3], "Pause learning");
  });
  it("offers Resume while paused, and no usable Pause when the state is not known", () => {
    assert.deepEqual(labels("paused")[3], "Resume learning");
    assert.equal(labels("offline")[3], "Pause learning (disabled)");
    assert.equal(labels("unknown")[0], "Learning: status not available (disabled)");
  });
  it("shows a note under the status, and the items call the actions", () => {
    const items = trayMenuTemplate("paused", actions, "Could not pause");
    assert.equal(items[1].label, "Could not pause");
    for (const i of items) if (i.click) (i.click as () => void)();
    assert.deepEqual(calls, ["show", "resume", "quit"]);
  });
});

describe("talking to the core", () => {
  let server: http.Server;
  let base = "";
  const seen: string[] = [];
  let statusBody: unknown = { model: { id: "m" }, training: { state: "training", activeCheckpoint: null } };
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"}`);
      res.setHeader("content-type", "application/json");
      if (req.url === "/api/status") return res.end(JSON.stringify(statusBody));
      if (req.url === "/api/training/pause") return res.end("{}");
      if (req.url === "/api/training/resume") {
        res.statusCode = 409;
        return res.end(JSON.stringify({ error: { message: "trainer is restarting" } }));
      }
      res.statusCode = 404;
      res.end("{}");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it("reads the state with the bearer token", async () => {
    assert.equal(await fetchLearningState({ apiBase: base, token: "tok-12345678" }), "learning");
    statusBody = { model: { id: "m" }, training: { state: "paused", activeCheckpoint: null } };
    assert.equal(await fetchLearningState({ apiBase: base, token: "tok-12345678" }), "paused");
    assert.equal(seen.at(-1), "GET /api/status Bearer tok-12345678");
    statusBody = {
      model: { id: "m" },
      training: { state: "training", step: 0, steps: 4, activeCheckpoint: null, progress: { part: "steps", fraction: 0.1, secondsLeft: 600 } },
    };
    assert.deepEqual(await fetchLearningStatus({ apiBase: base, token: "tok-12345678" }), { state: "learning", note: undefined, detail: "step 1 of 4, 10%" });
  });
  it("pause succeeds; a refused resume carries the server's message", async () => {
    assert.deepEqual(await setLearningPaused({ apiBase: base, token: "tok-12345678" }, true), { ok: true });
    assert.deepEqual(await setLearningPaused({ apiBase: base, token: "tok-12345678" }, false), {
      ok: false,
      reason: "error",
      message: "resume failed: trainer is restarting",
    });
  });
  it("a core that is not there is offline, not an exception", async () => {
    const closed = http.createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const dead = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    closed.close();
    await once(closed, "close");
    assert.equal(await fetchLearningState({ apiBase: dead, token: "t" }), "offline");
    const r = await setLearningPaused({ apiBase: dead, token: "t" }, true);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.reason, "offline");
  });

  describe("the real core", () => {
    let core: RunningCore;
    before(async () => {
      core = await startCore({ dataDir: tempDir(), port: 0 });
    });
    after(() => core.close());
    it("pause and resume on a core that serves no model say why (the core's reason), never throw", async () => {
      for (const paused of [true, false]) {
        const r = await setLearningPaused({ apiBase: core.url, token: core.token }, paused);
        assert.equal(r.ok, false);
        assert.equal(!r.ok && r.reason, "error");
        assert.match(!r.ok ? r.message : "", /^(pause|resume) failed: No model is loaded/);
      }
    });
    it("reads the real core's status: no model loaded", async () => {
      assert.equal(await fetchLearningState({ apiBase: core.url, token: core.token }), "no-model");
    });
  });
});

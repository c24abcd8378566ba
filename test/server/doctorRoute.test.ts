import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { DoctorBusyReply, DoctorEvent, DoctorStatus } from "../../electron/core/api/doctor.js";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { doctorReportSchema } from "../../electron/core/api/doctorReport.js";
import { tempDir } from "../helpers/cli.js";

describe("POST /api/doctor/run, GET /api/doctor (Settings: Check this machine)", () => {
  let core: RunningCore;
  const events: DoctorEvent[] = [];
  const api = (p: string, init: RequestInit = {}) =>
    fetch(`${core.url}${p}`, { ...init, headers: { authorization: `Bearer ${core.token}`, ...(init.body ? { "content-type": "application/json" } : {}) } });
  before(async () => {
    core = await startCore({ dataDir: tempDir(), port: 0 });
    core.bus.on("doctor", (e) => events.push(e));
  });
  after(() => core.close());

  it("has no run before the first", async () => {
    const r = await api("/api/doctor");
    assert.equal(r.status, 200);
    const s = (await r.json()) as DoctorStatus;
    assert.deepEqual(s, { running: false, startedAt: null, progress: [], report: null, markdown: null, error: null, finishedAt: null });
  });

  it("refuses an unknown section", async () => {
    const r = await api("/api/doctor/run", { method: "POST", body: JSON.stringify({ only: ["gpu"] }) });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { param: string } }).error.param, "only[0]");
  });

  it("runs one check at a time in a child, with progress, and ends with a report its schema takes", async () => {
    const first = await api("/api/doctor/run", { method: "POST", body: JSON.stringify({ only: ["machine"] }) });
    assert.equal(first.status, 202);
    assert.equal(((await first.json()) as DoctorStatus).running, true);

    // While it runs, the core answers and a second run is refused with the running one's status.
    const second = await api("/api/doctor/run", { method: "POST", body: JSON.stringify({ only: ["machine"] }) });
    assert.equal(second.status, 409);
    const busy = (await second.json()) as DoctorBusyReply;
    assert.equal(busy.error.code, "doctor_running");
    assert.equal(busy.doctor.running, true);

    let s: DoctorStatus;
    const t0 = Date.now();
    for (;;) {
      s = (await (await api("/api/doctor")).json()) as DoctorStatus;
      if (!s.running) break;
      assert.ok(Date.now() - t0 < 120_000, "the machine-only check ends within 2 minutes");
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(s.error, null);
    assert.ok(s.finishedAt);
    assert.ok(
      s.progress.some((l) => l.startsWith("machine: ")),
      s.progress.join("\n"),
    );
    const report = doctorReportSchema.parse(s.report);
    assert.equal(report.mode, "quick");
    assert.ok(report.inference.rows.every((r) => r.status === "skipped"));
    assert.match(s.markdown ?? "", /^# clawrl doctor \(quick\)/);

    // The SSE event: started, the same lines, done.
    assert.equal(events[0]?.type, "started");
    assert.deepEqual(
      events.filter((e) => e.type === "progress").map((e) => e.line),
      s.progress,
    );
    assert.deepEqual(events.at(-1), { type: "done", ok: true, finishedAt: s.finishedAt });

    // Done: another run may start.
    const again = await api("/api/doctor/run", { method: "POST" });
    assert.equal(again.status, 202);
  });
});

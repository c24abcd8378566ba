// Learning status for the tray: read from the core's GET /api/status (typed by the core's own
// StatusReply), paused/resumed through POST /api/training/pause|resume. No electron import.
import type { MenuItemConstructorOptions } from "electron";
import type { StatusReply } from "../core/api/status.js";

export type LearningState = "idle" | "learning" | "paused" | "no-model" | "off" | "offline" | "unknown";

const labels: Record<LearningState, string> = {
  idle: "Learning: idle",
  learning: "Learning: training…",
  paused: "Learning: paused",
  "no-model": "Learning: no model loaded",
  off: "Learning: off (see Training)",
  offline: "Core: reconnecting…",
  unknown: "Learning: status not available",
};

/** The tray's state for the core's training phase; a switch the typecheck holds to every phase. */
function stateOfPhase(phase: StatusReply["training"]["state"]): LearningState {
  switch (phase) {
    case "paused":
      return "paused";
    case "starting":
    case "training":
    case "evaluating":
    case "publishing":
    case "restarting":
      return "learning";
    case "idle":
    case "waiting":
      return "idle";
    case "error":
      // the trainer cannot run (a model it cannot fit, a backend that fails): the Training page says why
      return "off";
  }
}

/** The learning state in a /api/status reply; "unknown" for a body that is not one. */
export function learningStateFromStatus(body: unknown): LearningState {
  const status = body as Partial<StatusReply> | null;
  if (typeof status !== "object" || status === null || typeof status.training?.state !== "string") return "unknown";
  if (status.model === null) return "no-model";
  // a phase this shell does not know (a newer core) falls through the switch at run time
  return stateOfPhase(status.training.state) ?? "unknown";
}

/** How long after a rollback the tray keeps saying so. */
export const REVERT_NOTE_MS = 24 * 60 * 60 * 1000;

/**
 * A line for the tray when the learner rolled a checkpoint back by itself (the watch on what is
 * served: /api/status `training.lastRevert`), for a day after it happened; else undefined.
 */
export function revertNoteFromStatus(body: unknown, now = Date.now()): string | undefined {
  const r = (body as Partial<StatusReply> | null)?.training?.lastRevert;
  if (!r || typeof r.checkpoint !== "number") return undefined;
  const at = typeof r.at === "string" ? Date.parse(r.at) : NaN;
  if (!Number.isFinite(at) || now - at > REVERT_NOTE_MS) return undefined;
  const to = typeof r.to === "number" ? `ckpt-${r.to}` : "the base model";
  const why = r.rule === "fluency" ? "its answers read worse" : "its answers were rated worse";
  return `Rolled back ckpt-${r.checkpoint} to ${to} (${why})`;
}

/**
 * What the learner is doing, for the tray's status line while it learns (/api/status
 * `training.progress`): "step 2 of 4, 45%" or "checking the new adapter, 30%"; else undefined.
 */
export function progressFromStatus(body: unknown): string | undefined {
  const t = (body as Partial<StatusReply> | null)?.training;
  const p = t?.progress;
  if (!p || typeof p.fraction !== "number") return undefined;
  const pct = `${Math.floor(p.fraction * 100)}%`;
  if (p.part !== "steps") return `checking the new adapter, ${pct}`;
  return typeof t.step === "number" && typeof t.steps === "number" ? `step ${Math.min(t.steps, t.step + 1)} of ${t.steps}, ${pct}` : `training, ${pct}`;
}

/** The tray's status line: the state, or what learning is doing when it says. */
function statusLabel(state: LearningState, detail?: string): string {
  return state === "learning" && detail ? `Learning: ${detail}` : labels[state];
}

export interface TrayActions {
  showWindow(): void;
  pause(): void;
  resume(): void;
  quit(): void;
}

/** The tray's context menu for a state. Pause/Resume is offered only when it means something. */
export function trayMenuTemplate(state: LearningState, actions: TrayActions, note?: string, detail?: string): MenuItemConstructorOptions[] {
  const items: MenuItemConstructorOptions[] = [
    { label: statusLabel(state, detail), enabled: false },
    ...(note ? [{ label: note, enabled: false }] : []),
    { type: "separator" },
    { label: "Open ClawRL", click: () => actions.showWindow() },
  ];
  if (state === "paused") items.push({ label: "Resume learning", click: () => actions.resume() });
  else items.push({ label: "Pause learning", enabled: state === "idle" || state === "learning", click: () => actions.pause() });
  items.push({ type: "separator" }, { label: "Quit ClawRL", click: () => actions.quit() });
  return items;
}

export function trayTooltip(state: LearningState, detail?: string): string {
  return `ClawRL: ${statusLabel(state, detail).replace(/^Learning: /, "learning ")}`;
}

export interface CoreCall {
  apiBase: string;
  token: string;
  fetchImpl?: typeof fetch;
}

/** GET /api/status → state; a core that does not answer is "offline". */
export async function fetchLearningState(call: CoreCall): Promise<LearningState> {
  return (await fetchLearningStatus(call)).state;
}

/** GET /api/status → state, a note when the learner rolled back by itself lately, and what learning is doing. */
export async function fetchLearningStatus({ apiBase, token, fetchImpl = fetch }: CoreCall): Promise<{ state: LearningState; note?: string; detail?: string }> {
  try {
    const res = await fetchImpl(`${apiBase}/api/status`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000) });
    if (!res.ok) return { state: "unknown" };
    const body = await res.json();
    return { state: learningStateFromStatus(body), note: revertNoteFromStatus(body), detail: progressFromStatus(body) };
  } catch {
    return { state: "offline" };
  }
}

export type ToggleResult = { ok: true } | { ok: false; reason: "not-available" | "offline" | "error"; message: string };

/** POST /api/training/pause|resume; a refusal is reported with the core's reason, never thrown. */
export async function setLearningPaused(call: CoreCall, paused: boolean): Promise<ToggleResult> {
  const { apiBase, token, fetchImpl = fetch } = call;
  const route = paused ? "pause" : "resume";
  try {
    const res = await fetchImpl(`${apiBase}/api/training/${route}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (res.ok) return { ok: true };
    if (res.status === 404) return { ok: false, reason: "not-available", message: `This core has no learning loop (started without training).` };
    const text = await res.text();
    let message = `${route} failed: HTTP ${res.status}`;
    try {
      const body = JSON.parse(text) as { error?: { message?: string } };
      if (body.error?.message) message = `${route} failed: ${body.error.message}`;
    } catch {
      // not JSON: keep the status line
    }
    return { ok: false, reason: "error", message };
  } catch (err) {
    return { ok: false, reason: "offline", message: `core not reachable: ${err instanceof Error ? err.message : String(err)}` };
  }
}

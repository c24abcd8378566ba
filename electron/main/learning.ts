// Learning status for the tray: read from the core's /api/status, paused/resumed through
// POST /api/training/pause|resume. Those routes may not exist yet (a later issue): a 404 is a
// normal answer here ("not available"), never an error dialog. No electron import.
import type { MenuItemConstructorOptions } from "electron";

export type LearningState = "idle" | "learning" | "paused" | "offline" | "unknown";

const labels: Record<LearningState, string> = {
  idle: "Learning: idle",
  learning: "Learning: training…",
  paused: "Learning: paused",
  offline: "Core: reconnecting…",
  unknown: "Learning: status not available",
};

function pickString(obj: unknown, ...keys: string[]): string | undefined {
  let cur: unknown = obj;
  for (const k of keys) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return typeof cur === "string" ? cur : undefined;
}

/**
 * The learning state in a /api/status body. Accepts the shapes the status route may take
 * (`training: {state}`, `training: {status}`, `training: "…"`, `trainingState`), mapping the
 * trainer's words onto the three the tray shows.
 */
export function learningStateFromStatus(body: unknown): LearningState {
  const word = (
    pickString(body, "training", "state") ??
    pickString(body, "training", "status") ??
    pickString(body, "training") ??
    pickString(body, "trainingState") ??
    pickString(body, "learning", "state")
  )?.toLowerCase();
  if (word === undefined) return "unknown";
  if (word === "paused") return "paused";
  // The supervisor's phases of a run (electron/core/training/supervisor.ts) are all learning.
  if (["running", "training", "learning", "busy", "judging", "starting", "evaluating", "publishing", "restarting"].includes(word)) return "learning";
  if (["idle", "waiting", "ready", "stopped", "off", "queued"].includes(word)) return "idle";
  return "unknown";
}

/** How long after a rollback the tray keeps saying so. */
export const REVERT_NOTE_MS = 24 * 60 * 60 * 1000;

/**
 * A line for the tray when the learner rolled a checkpoint back by itself (the watch on what is
 * served: /api/status `training.lastRevert`), for a day after it happened; else undefined.
 */
export function revertNoteFromStatus(body: unknown, now = Date.now()): string | undefined {
  const r = (body as { training?: { lastRevert?: { checkpoint?: unknown; to?: unknown; at?: unknown; rule?: unknown } | null } } | null)?.training?.lastRevert;
  if (!r || typeof r.checkpoint !== "number") return undefined;
  const at = typeof r.at === "string" ? Date.parse(r.at) : NaN;
  if (!Number.isFinite(at) || now - at > REVERT_NOTE_MS) return undefined;
  const to = typeof r.to === "number" ? `ckpt-${r.to}` : "the base model";
  const why = r.rule === "fluency" ? "its answers read worse" : "its answers were rated worse";
  return `Rolled back ckpt-${r.checkpoint} to ${to} (${why})`;
}

export interface TrayActions {
  showWindow(): void;
  pause(): void;
  resume(): void;
  quit(): void;
}

/** The tray's context menu for a state. Pause/Resume is offered only when it means something. */
export function trayMenuTemplate(state: LearningState, actions: TrayActions, note?: string): MenuItemConstructorOptions[] {
  const items: MenuItemConstructorOptions[] = [
    { label: labels[state], enabled: false },
    ...(note ? [{ label: note, enabled: false }] : []),
    { type: "separator" },
    { label: "Open ClawRL", click: () => actions.showWindow() },
  ];
  if (state === "paused") items.push({ label: "Resume learning", click: () => actions.resume() });
  else items.push({ label: "Pause learning", enabled: state === "idle" || state === "learning", click: () => actions.pause() });
  items.push({ type: "separator" }, { label: "Quit ClawRL", click: () => actions.quit() });
  return items;
}

export function trayTooltip(state: LearningState): string {
  return `ClawRL: ${labels[state].replace(/^Learning: /, "learning ")}`;
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

/** GET /api/status → state, and a note when the learner rolled back by itself lately. */
export async function fetchLearningStatus({ apiBase, token, fetchImpl = fetch }: CoreCall): Promise<{ state: LearningState; note?: string }> {
  try {
    const res = await fetchImpl(`${apiBase}/api/status`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000) });
    if (res.status === 404) return { state: "unknown" };
    if (!res.ok) return { state: "unknown" };
    const body = await res.json();
    return { state: learningStateFromStatus(body), note: revertNoteFromStatus(body) };
  } catch {
    return { state: "offline" };
  }
}

export type ToggleResult = { ok: true } | { ok: false; reason: "not-available" | "offline" | "error"; message: string };

/** POST /api/training/pause|resume; 404 (route not there yet) is reported, not thrown. */
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
    if (res.status === 404) return { ok: false, reason: "not-available", message: `This version of the core cannot ${route} learning yet.` };
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

import fs from "node:fs";
import path from "node:path";
import { LowSync, type SyncAdapter } from "lowdb";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import { SettingsSchema, formatIssue, type Settings } from "./settings.js";
import type { SessionView } from "../api/sessions.js";
import { parseStoredPreferences, type Preference } from "../preferences/schema.js";

/** A session as stored: the shape GET /api/sessions lists (one declaration, in the contract). */
export type SessionMeta = SessionView;

/** A published adapter. The training supervisor owns the extra fields. */
export interface CheckpointMeta {
  id: number;
  createdAt: string;
  /** adapter file (GGUF) */
  path: string;
  parent: number | null;
  [extra: string]: unknown;
}

export interface TrainingStatus {
  state: "idle" | "waiting" | "training" | "publishing" | "error";
  /** checkpoint being served, null = base model */
  activeCheckpoint: number | null;
  samplesReady: number;
  lastError: string | null;
  updatedAt: string | null;
  [extra: string]: unknown;
}

export interface StateData {
  version: 1;
  settings: Settings;
  sessions: Record<string, SessionMeta>;
  checkpoints: CheckpointMeta[];
  training: TrainingStatus;
  /** standing preferences (electron/core/preferences/) */
  preferences: Preference[];
  /** deleted preferences, newest last, so a delete can be undone (bounded) */
  preferenceTrash: Preference[];
}

/** Session ids come from clients: a prototype-less map makes "__proto__" just another key. */
const sessionMap = (): Record<string, SessionMeta> => Object.create(null) as Record<string, SessionMeta>;

export const defaultState = (): StateData => ({
  version: 1,
  settings: SettingsSchema.parse({}),
  sessions: sessionMap(),
  checkpoints: [],
  training: { state: "idle", activeCheckpoint: null, samplesReady: 0, lastError: null, updatedAt: null },
  preferences: [],
  preferenceTrash: [],
});

/**
 * lowdb's own JSONFile adapter renames a temp file but never fsyncs, so a power cut can leave
 * an empty state.json. This one writes through writeFileAtomicSync.
 */
export class DurableJsonFile<T> implements SyncAdapter<T> {
  constructor(readonly file: string) {}

  read(): T | null {
    let text: string;
    try {
      text = fs.readFileSync(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new StateFileError(`${this.file} is not valid JSON (${(err as Error).message}); move it aside to start with fresh settings`);
    }
  }

  write(data: T): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeFileAtomicSync(this.file, `${JSON.stringify(data, null, 1)}\n`);
  }
}

export class StateFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateFileError";
  }
}

/** Removes temp files that a writer killed mid-write left behind (only those of dead processes). */
function removeStaleTemps(file: string): void {
  const dir = path.dirname(file);
  const re = new RegExp(`^\\.${path.basename(file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.(\\d+)\\.[0-9a-f]+\\.tmp$`);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = re.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
      continue; // alive: another core on this data dir may be writing it right now
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") continue;
    }
    fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** Opens state.json (defaults when absent), filling keys a newer version added. */
export function openState(file: string, readOnly = false): LowSync<StateData> {
  if (!readOnly) removeStaleTemps(file);
  const adapter = new DurableJsonFile<StateData>(file);
  const db = new LowSync<StateData>(
    readOnly ? { read: () => adapter.read(), write: () => { throw new Error(`${file} is open read-only`); } } : adapter,
    defaultState(),
  );
  db.read();
  db.data = normalise(db.data, file);
  return db;
}

function normalise(raw: unknown, file: string): StateData {
  const base = defaultState();
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new StateFileError(`${file} does not hold a JSON object`);
  const r = raw as Partial<StateData>;
  const settings = SettingsSchema.safeParse(r.settings ?? {});
  if (!settings.success) throw new StateFileError(`${file}: bad setting: ${formatIssue(settings.error.issues[0])}`);
  return {
    version: 1,
    settings: settings.data,
    sessions: Object.assign(sessionMap(), typeof r.sessions === "object" && r.sessions !== null ? r.sessions : {}),
    checkpoints: Array.isArray(r.checkpoints) ? r.checkpoints : [],
    training: { ...base.training, ...(typeof r.training === "object" && r.training !== null ? r.training : {}) },
    preferences: parseStoredPreferences(r.preferences, file),
    preferenceTrash: parseStoredPreferences(r.preferenceTrash, file),
  };
}

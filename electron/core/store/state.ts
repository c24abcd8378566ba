import fs from "node:fs";
import path from "node:path";
import { LowSync, type SyncAdapter } from "lowdb";
import { z } from "zod";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import { SettingsSchema, type Settings } from "../api/settings.js";
import { formatIssue } from "./settings.js";
import type { SessionView } from "../api/sessions.js";
import { PreferenceSchema, type Preference } from "../api/preferenceSchema.js";

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
  /** the file of the model the active checkpoint belongs to (training/checkpoints.ts enterModelLine) */
  servedModel?: string;
  /** the checkpoint each other model served last, by model file: its learning line when it is served again */
  activeByModel?: Record<string, number | null>;
  /** the learning-rate policy's events, oldest first (training/lrPolicy.ts); absent in a data dir from before it */
  lrEvents?: LrEvent[];
  [extra: string]: unknown;
}

/**
 * What moved the learning-rate scale (training/lrPolicy.ts has the rule): a trained candidate
 * published or rejected, an import published or rejected, a rollback by the watch, a checkpoint
 * (or the base model) served by hand, the loop starting again.
 */
export type LrEventKind = "published" | "rejected" | "imported" | "importRejected" | "reverted" | "activated" | "restart";

export interface LrEvent {
  at: string;
  kind: LrEventKind;
  /** the checkpoint it concerns (committed, reverted or activated); null: the base model or none */
  checkpoint: number | null;
  /** the scale from this event on */
  scale: number;
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
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw unreadableState(this.file, `not valid JSON: ${(err as Error).message}`);
    }
    // lowdb takes null as "no file" and would start on defaults, dropping settings, preferences
    // and the active checkpoint without a word: a file that parses to no object is as damaged.
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw unreadableState(this.file, "it does not hold a JSON object");
    return value as T;
  }

  write(data: T): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeFileAtomicSync(this.file, `${JSON.stringify(data, null, 1)}\n`);
  }
}

/** One message for a state file the app cannot use, whatever is wrong with it; the file is left as it is. */
function unreadableState(file: string, why: string): StateFileError {
  return new StateFileError(`${file} is not a usable state file (${why}); nothing was changed: move it aside to start with fresh settings`);
}

/**
 * The stored shape, checked on open: what the app reads from each part. Extra keys are kept
 * (a newer version's), missing parts get defaults; a part of the wrong type refuses the file.
 */
const StoredState = z
  .object({
    version: z.literal(1).optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
    sessions: z.record(z.string(), z.looseObject({ id: z.string() })).optional(),
    checkpoints: z.array(z.looseObject({ id: z.int().nonnegative(), path: z.string() })).optional(),
    training: z.looseObject({ activeCheckpoint: z.int().nonnegative().nullable().optional() }).optional(),
  })
  .loose();

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
    readOnly
      ? {
          read: () => adapter.read(),
          write: () => {
            throw new Error(`${file} is open read-only`);
          },
        }
      : adapter,
    defaultState(),
  );
  db.read();
  db.data = normalise(db.data, file);
  return db;
}

function normalise(raw: unknown, file: string): StateData {
  const base = defaultState();
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw unreadableState(file, "it does not hold a JSON object");
  const shape = StoredState.safeParse(raw);
  if (!shape.success) throw unreadableState(file, formatIssue(shape.error.issues[0]));
  const r = raw as Partial<StateData>;
  for (const [key, sess] of Object.entries(r.sessions ?? {})) {
    if (sess.id !== key) throw unreadableState(file, `'sessions.${key}' holds session '${sess.id}'`);
  }
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

/** Reads the stored list, dropping (with a warning) entries a newer or damaged file holds. */
export function parseStoredPreferences(raw: unknown, where: string): Preference[] {
  if (!Array.isArray(raw)) return [];
  const out: Preference[] = [];
  for (const item of raw) {
    const r = PreferenceSchema.safeParse(item);
    if (r.success) out.push(r.data);
    else console.warn(`${where}: a stored preference was skipped (${r.error.issues[0]?.message ?? "invalid"})`);
  }
  return out;
}

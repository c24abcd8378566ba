// Window size and position, remembered between runs in a small JSON file in the user data dir.
// Read defensively (a bad or foreign file means defaults), written atomically, and checked
// against the displays present now so a window never reopens off-screen. No electron import.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomicSync } from "../../common/fs/atomicFile.js";
import { defaultWindowSize, minWindowSize } from "./security.js";

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

const finite = z.number().finite();
const windowStateSchema = z.object({
  bounds: z.object({ x: finite, y: finite, width: finite.positive(), height: finite.positive() }),
  maximized: z.boolean(),
});
export type WindowState = z.infer<typeof windowStateSchema>;

/** Parses saved state; anything malformed is null (the caller uses defaults). */
export function parseWindowState(value: unknown): WindowState | null {
  const r = windowStateSchema.safeParse(value);
  return r.success ? r.data : null;
}

export function loadWindowState(file: string): WindowState | null {
  try {
    return parseWindowState(JSON.parse(fs.readFileSync(file, "utf8")));
  } catch {
    return null;
  }
}

/** Writes to a temp name, fsyncs, renames: a crash leaves the old file or the new, never half. */
export function saveWindowState(file: string, state: WindowState): void {
  const valid = parseWindowState(state);
  if (!valid) throw new Error("refusing to save an invalid window state");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(valid)}\n`);
}

function overlap(a: Rect, b: Rect): { width: number; height: number } {
  return {
    width: Math.max(0, Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x)),
    height: Math.max(0, Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y)),
  };
}

/** How much of the window must be on a display for its saved position to be kept. */
export const minVisible = { width: 100, height: 50 } as const;

export interface PlacedBounds {
  /** Position is absent when the saved one is unusable: the window manager centres it. */
  x?: number;
  y?: number;
  width: number;
  height: number;
  maximized: boolean;
}

/**
 * Fits saved state to the displays' work areas now present (primary first). Size is clamped
 * to the minimum and to the largest work area; the position is kept only if enough of the
 * window (its top strip included, so it can be dragged) lies on some display.
 */
export function placeWindow(saved: WindowState | null, workAreas: Rect[]): PlacedBounds {
  const primary = workAreas[0];
  if (!saved || !primary) {
    const width = primary ? Math.min(defaultWindowSize.width, primary.width) : defaultWindowSize.width;
    const height = primary ? Math.min(defaultWindowSize.height, primary.height) : defaultWindowSize.height;
    return { width: Math.max(minWindowSize.width, width), height: Math.max(minWindowSize.height, height), maximized: false };
  }
  const maxW = Math.max(...workAreas.map((a) => a.width));
  const maxH = Math.max(...workAreas.map((a) => a.height));
  const width = Math.round(Math.max(minWindowSize.width, Math.min(saved.bounds.width, maxW)));
  const height = Math.round(Math.max(minWindowSize.height, Math.min(saved.bounds.height, maxH)));
  const rect = { x: Math.round(saved.bounds.x), y: Math.round(saved.bounds.y), width, height };
  const titleStrip = { ...rect, height: Math.min(rect.height, 40) };
  const visible = workAreas.some((a) => {
    const o = overlap(rect, a);
    const t = overlap(titleStrip, a);
    return o.width >= minVisible.width && o.height >= minVisible.height && t.width >= minVisible.width && t.height > 0;
  });
  return visible ? { ...rect, maximized: saved.maximized } : { width, height, maximized: saved.maximized };
}

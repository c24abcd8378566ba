/** The core's ISO time as epoch ms (what fmtTime takes); null when absent or unreadable. */
export function epochOf(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** A finite number, else null (a figure the core leaves out or sends as null shows "—"). */
export const finite = (v: number | null | undefined): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

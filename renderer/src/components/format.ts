export function fmtBytes(n: number | null): string {
  if (n === null) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v >= 100 || i === 0 ? 0 : 1)} ${units[i]}`;
}

export function fmtNum(n: number | null, digits = 3): string {
  if (n === null) return "—";
  if (n !== 0 && Math.abs(n) < 1e-3) return n.toExponential(1);
  return Number(n.toFixed(digits)).toString();
}

export function fmtTime(t: number | null): string {
  if (t === null) return "—";
  const d = new Date(t);
  const today = new Date().toDateString() === d.toDateString();
  return today
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export function fmtDuration(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return "—";
  if (s > 0 && s < 1) return "under 1 s";
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** What serves on top of the model: "No adapter", or the checkpoint's name. */
export function adapterLabel(adapter: string | null | undefined): string {
  if (!adapter || adapter === "base") return "No adapter";
  return `Adapter ${adapter}`;
}

/** The file name of a path, on any OS's separators. */
export function fileName(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}

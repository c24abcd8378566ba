/**
 * The eval chart, drawn as SVG by hand (no plotting dependency): score (0..1) against
 * interactions, one line per method and the no-learning baseline, each with its confidence
 * band (a translucent polygon from lo to hi).
 */

export interface ChartPoint {
  x: number;
  mean: number;
  lo: number;
  hi: number;
}

export interface ChartSeries {
  name: string;
  points: ChartPoint[];
  /** dashed line (the baseline) */
  dashed?: boolean;
}

export interface ChartOptions {
  title: string;
  xLabel?: string;
  yLabel?: string;
  width?: number;
  height?: number;
}

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
const BASELINE_COLOR = "#555555";

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const f = (n: number) => (Math.round(n * 100) / 100).toString();

/** "Nice" tick values covering [lo, hi]: steps of 1, 2 or 5 × 10^k, about `count` of them. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toFixed(10)));
  return out;
}

export function renderChart(series: readonly ChartSeries[], o: ChartOptions): string {
  const W = o.width ?? 720;
  const H = o.height ?? 420;
  const m = { left: 60, right: 170, top: 40, bottom: 50 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const xMin = xs.length ? Math.min(...xs) : 0;
  let xMax = xs.length ? Math.max(...xs) : 1;
  if (xMax === xMin) xMax = xMin + 1;
  const X = (x: number) => m.left + ((x - xMin) / (xMax - xMin)) * pw;
  const Y = (y: number) => m.top + (1 - Math.min(1, Math.max(0, y))) * ph;

  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${esc(o.title)}</text>`);
  // Grid and axes.
  for (const t of niceTicks(0, 1, 5)) {
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${f(Y(t))}" y2="${f(Y(t))}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.left - 8}" y="${f(Y(t) + 4)}" text-anchor="end">${t}</text>`);
  }
  for (const t of niceTicks(xMin, xMax, 6)) {
    parts.push(`<line x1="${f(X(t))}" x2="${f(X(t))}" y1="${m.top + ph}" y2="${m.top + ph + 5}" stroke="#333"/>`);
    parts.push(`<text x="${f(X(t))}" y="${m.top + ph + 18}" text-anchor="middle">${t}</text>`);
  }
  parts.push(`<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${m.top + ph}" stroke="#333"/>`);
  parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${m.top + ph}" y2="${m.top + ph}" stroke="#333"/>`);
  parts.push(`<text x="${m.left + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(o.xLabel ?? "interactions")}</text>`);
  parts.push(`<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel ?? "held-out score")}</text>`);

  let colorIndex = 0;
  series.forEach((s, i) => {
    const color = s.dashed ? BASELINE_COLOR : PALETTE[colorIndex++ % PALETTE.length];
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    if (pts.length === 0) return;
    const cls = `series series-${i}`;
    // A single point (e.g. a baseline measured once) is drawn across the whole x range.
    const drawn =
      pts.length === 1
        ? [
            { ...pts[0], x: xMin },
            { ...pts[0], x: xMax },
          ]
        : pts;
    const band = [...drawn.map((p) => `${f(X(p.x))},${f(Y(p.hi))}`), ...[...drawn].reverse().map((p) => `${f(X(p.x))},${f(Y(p.lo))}`)].join(" ");
    parts.push(`<g class="${cls}" data-name="${esc(s.name)}">`);
    parts.push(`<polygon class="band" points="${band}" fill="${color}" fill-opacity="0.15" stroke="none"/>`);
    parts.push(
      `<polyline class="line" points="${drawn.map((p) => `${f(X(p.x))},${f(Y(p.mean))}`).join(" ")}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    for (const p of pts)
      parts.push(
        `<circle cx="${f(X(p.x))}" cy="${f(Y(p.mean))}" r="3" fill="${color}"><title>${esc(s.name)} @ ${p.x}: ${p.mean.toFixed(3)} [${p.lo.toFixed(3)}, ${p.hi.toFixed(3)}]</title></circle>`,
      );
    parts.push(`</g>`);
    const ly = m.top + 10 + i * 20;
    parts.push(
      `<line x1="${m.left + pw + 15}" x2="${m.left + pw + 40}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    parts.push(`<text x="${m.left + pw + 46}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  parts.push(`</svg>`);
  return parts.join("\n") + "\n";
}

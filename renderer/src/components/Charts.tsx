/** Small SVG charts of our own: a line over time and a strip of gate verdicts. No chart library needed for this. */

const W = 320;
const H = 120;
const PAD = { l: 44, r: 8, t: 10, b: 18 };

/** An axis label that fits the left margin: 3 significant digits, small values as 7.4e-4. */
function axisLabel(v: number): string {
  if (v !== 0 && Math.abs(v) < 0.01) return v.toExponential(1);
  return String(Number(v.toPrecision(3)));
}

/** A second line on the same axes (drawn dashed), with its name for the legend. */
export interface ExtraSeries {
  label: string;
  values: (number | null)[];
  color: string;
}

/**
 * A line over time (one point per candidate). `extra`: another series on the same axes, dashed;
 * `limit`: a horizontal line (a budget), labelled, always inside the drawn range.
 */
export function LineChart({
  title,
  values,
  color,
  label,
  extra,
  limit,
}: {
  title: string;
  values: (number | null)[];
  color: string;
  label?: string;
  extra?: ExtraSeries;
  limit?: { value: number; label: string } | null;
}) {
  const pts = values.map((v, i) => ({ i, v })).filter((p): p is { i: number; v: number } => p.v !== null);
  const more = (extra?.values ?? []).map((v, i) => ({ i, v })).filter((p): p is { i: number; v: number } => p.v !== null);
  const last = pts.at(-1)?.v;
  let body;
  if (pts.length === 0 && more.length === 0) {
    body = (
      <text x={W / 2} y={H / 2} textAnchor="middle" className="chart-empty">
        no data yet
      </text>
    );
  } else {
    const all = [...pts, ...more].map((p) => p.v).concat(limit ? [limit.value] : []);
    let lo = Math.min(...all);
    let hi = Math.max(...all);
    if (lo === hi) {
      lo -= 1;
      hi += 1;
    }
    const n = Math.max(values.length - 1, (extra?.values.length ?? 0) - 1, 1);
    const x = (i: number) => PAD.l + ((W - PAD.l - PAD.r) * i) / n;
    const y = (v: number) => PAD.t + (H - PAD.t - PAD.b) * (1 - (v - lo) / (hi - lo));
    const path = (ps: { i: number; v: number }[]) => ps.map((p, k) => `${k ? "L" : "M"}${x(p.i).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ");
    body = (
      <>
        <line x1={PAD.l} x2={W - PAD.r} y1={y(hi)} y2={y(hi)} className="chart-grid" />
        <line x1={PAD.l} x2={W - PAD.r} y1={y(lo)} y2={y(lo)} className="chart-grid" />
        <text x={PAD.l - 4} y={y(hi) + 4} textAnchor="end" className="chart-axis">
          {axisLabel(hi)}
        </text>
        <text x={PAD.l - 4} y={y(lo) + 4} textAnchor="end" className="chart-axis">
          {axisLabel(lo)}
        </text>
        {limit && (
          <g className="chart-limit">
            <line x1={PAD.l} x2={W - PAD.r} y1={y(limit.value)} y2={y(limit.value)} />
            <text x={PAD.l + 4} y={y(limit.value) - 3} textAnchor="start">
              {limit.label} {axisLabel(limit.value)}
            </text>
          </g>
        )}
        {more.length > 0 && <path d={path(more)} fill="none" stroke={extra!.color} strokeWidth={1.5} strokeDasharray="4 3" strokeLinejoin="round" />}
        {pts.length > 0 && <path d={path(pts)} fill="none" stroke={color} strokeWidth={2} strokeLinejoin="round" />}
        {pts.map((p) => (
          <circle key={p.i} cx={x(p.i)} cy={y(p.v)} r={2.5} fill={color} />
        ))}
      </>
    );
  }
  return (
    <figure className="chart">
      <figcaption>
        {title}
        <span className="chart-last">{last === undefined ? "" : Number(last.toPrecision(3))}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title} over time`}>
        {body}
      </svg>
      {extra && (
        <div className="chart-legend small muted" aria-hidden="true">
          <span className="chart-key" style={{ background: color }} /> {label ?? title}{" "}
          <span className="chart-key chart-key-dashed" style={{ borderColor: extra.color }} /> {extra.label}
        </div>
      )}
    </figure>
  );
}

/** A verdict's square: published (green), reverted by the learner after it served (amber), rejected (red). */
function verdictClass(v: string): string {
  if (/revert/i.test(v)) return "verdict reverted";
  return /pass|publish|accept/i.test(v) ? "verdict ok" : "verdict bad";
}

export function VerdictStrip({ verdicts }: { verdicts: (string | null)[] }) {
  const shown = verdicts.filter((v): v is string => v !== null);
  const passed = shown.filter((v) => /pass|publish|accept/i.test(v)).length;
  const reverted = shown.filter((v) => /revert/i.test(v)).length;
  return (
    <figure className="chart">
      <figcaption>
        Gate verdicts
        <span className="chart-last">{shown.length ? `${passed}/${shown.length} published` : ""}</span>
      </figcaption>
      <div className="verdicts" role="img" aria-label={`Gate verdicts: ${passed} published of ${shown.length}`}>
        {shown.length === 0 && <span className="chart-empty">no data yet</span>}
        {shown.map((v, i) => (
          <span key={i} className={verdictClass(v)} title={v} />
        ))}
      </div>
      {shown.length > 0 && (
        <div className="verdict-legend small muted" aria-hidden="true">
          <span className="verdict ok" /> published
          {reverted > 0 && (
            <>
              {" "}
              <span className="verdict reverted" /> rolled back
            </>
          )}{" "}
          <span className="verdict bad" /> rejected · oldest first
        </div>
      )}
    </figure>
  );
}

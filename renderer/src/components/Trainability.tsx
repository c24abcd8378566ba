import type { TrainabilityView } from "../../../electron/core/api/models.js";
import { fmtBytes } from "./format.js";

interface Need {
  needDeviceBytes: number | null;
  availableDeviceBytes: number | null;
  needHostBytes: number | null;
  availableHostBytes: number | null;
}

/** "5.7 GB of wasm memory (3.4 GB available)" and/or the same for RAM: what training lacks. */
export function memoryNeed(m: Need, backend?: string | null): string {
  const parts: string[] = [];
  if (m.needDeviceBytes !== null && m.availableDeviceBytes !== null && m.needDeviceBytes > m.availableDeviceBytes) {
    parts.push(`${fmtBytes(m.needDeviceBytes)} of ${backend ? `${backend} ` : "trainer "}memory (${fmtBytes(m.availableDeviceBytes)} available)`);
  }
  if (m.needHostBytes !== null && m.availableHostBytes !== null && m.needHostBytes > m.availableHostBytes) {
    parts.push(`${fmtBytes(m.needHostBytes)} of RAM (${fmtBytes(m.availableHostBytes)} available)`);
  }
  return parts.length ? parts.join(" and ") : "more memory than is available";
}

/** "Trains here · wasm · context 1,024", "Too large to train here: needs …", "Serve only". */
export function verdictText(t: TrainabilityView): string {
  if (t.fits) return `Trains here · ${t.backend} · context ${t.maxContext.toLocaleString()}`;
  if (t.limit === "architecture") return "Serve only";
  return `Too large to train here: needs ${memoryNeed(t, t.backend)}`;
}

/** One line under a model's name: whether it trains on this machine; the plan's summary on hover. */
export function TrainVerdict({ t }: { t: TrainabilityView | null }) {
  if (!t) return null;
  const kind = t.fits ? "ok" : t.limit === "architecture" ? "serve" : "no";
  return (
    <div className={`small train-verdict train-verdict-${kind}`} title={t.summary}>
      {verdictText(t)}
    </div>
  );
}

import type { Term } from "./terms.js";

/**
 * A labelled figure; `wide` for long values such as a model's file name (two grid columns). A
 * `Term` label shows its exact term as the label's tooltip; `detail` is a small line under the value.
 */
export function Card({ label, value, live, wide, detail }: { label: string | Term; value: string | number; live?: boolean; wide?: boolean; detail?: string }) {
  const text = typeof label === "string" ? label : label.label;
  return (
    <div className={wide ? "card card-wide" : "card"}>
      <div className="card-label" title={typeof label === "string" ? undefined : label.term}>
        {text}
      </div>
      <div className="card-value" aria-live={live ? "polite" : undefined}>
        {value}
      </div>
      {detail && <div className="term-detail">{detail}</div>}
    </div>
  );
}

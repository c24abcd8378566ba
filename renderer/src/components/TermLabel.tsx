import { termDetail, type Term } from "./terms.js";
import "./terms.css";

/** A plain label with the exact term in a small muted details line: "How much … per lesson" / "LoRA rank 16". */
export function TermText({ t, value }: { t: Term; value?: string | number | null }) {
  return (
    <>
      {t.label}
      <span className="term-detail">{termDetail(t, value)}</span>
    </>
  );
}

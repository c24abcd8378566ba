import { useState, type FormEvent } from "react";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import type { ImportReply } from "../../../../electron/core/api/training.js";

/** How an import ended: a checkpoint the gate published or rejected, or an error. */
export type ImportOutcome =
  { kind: "published" | "rejected"; version: string; reasons: string[]; warnings: string[]; pauseMs: number | null } | { kind: "error"; message: string };

/** The import dialog's state: the path, whether the import runs, and its outcome (POST /api/checkpoints/import). */
export function useAdapterImport() {
  const { client } = useCore();
  const [path, setPath] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<ImportOutcome | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!path.trim() || busy) return;
    setBusy(true);
    setOutcome(null);
    try {
      const r = await client.post<ImportReply>("/api/checkpoints/import", { path: path.trim() });
      setOutcome({
        kind: r.checkpoint.verdict === "published" ? "published" : "rejected",
        version: r.checkpoint.version,
        reasons: r.checkpoint.gate.reasons,
        warnings: r.imported.warnings,
        pauseMs: r.swap?.pauseMs ?? null,
      });
    } catch (err) {
      // The core names the path first; the field shows it already.
      const m = messageOf(err);
      const prefix = `cannot import ${path.trim()}: `;
      setOutcome({ kind: "error", message: m.startsWith(prefix) ? m.slice(prefix.length) : m });
    } finally {
      setBusy(false);
    }
  };

  /** The file picker's choice, or why it failed. */
  const choose = () => {
    window.clawrl?.openModelFile?.().then(
      (p) => p && setPath(p),
      (err: unknown) => setOutcome({ kind: "error", message: messageOf(err) }),
    );
  };

  const imported = outcome !== null && outcome.kind !== "error";
  return { path, setPath, busy, outcome, imported, submit, choose };
}

import { readGguf } from "../../../../models/gguf/reader.js";
import { summarizeGguf, TRAINABLE_ARCHS, type GgufSummary } from "../../../../models/gguf/summary.js";
import { GgufError } from "../../../../models/gguf/types.js";
import { CliError, type CommandSpec } from "../command.js";

export const inspect: CommandSpec = {
  name: "inspect",
  usage: "FILE [--json]",
  summary: "Describe a GGUF model or LoRA adapter.",
  options: {
    json: { type: "boolean", description: "print the description as JSON" },
  },
  positionals: { min: 1, max: 1, names: "FILE" },
  async run(args) {
    let summary: GgufSummary;
    try {
      summary = summarizeGguf(readGguf(args.positionals[0]));
    } catch (err) {
      if (err instanceof GgufError) throw new CliError(err.message);
      throw err;
    }
    console.log(args.values.json ? JSON.stringify(summary, null, 2) : formatSummary(summary));
  },
};

const int = (n: number) => n.toLocaleString("en-US");

function bytes(n: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(2)} ${units[u]} (${int(n)} bytes)`;
}

function shortCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`;
  return String(n);
}

const orDash = (v: string | number | null) => (v === null ? "-" : typeof v === "number" ? int(v) : v);

/** The human-readable listing: one "label  value" line per fact. */
export function formatSummary(s: GgufSummary): string {
  const rows: Array<[string, string]> = [
    ["file", s.path],
    ["size", bytes(s.fileSize)],
    ["gguf version", String(s.ggufVersion)],
    ["kind", s.kind === "lora-adapter" ? "LoRA adapter" : s.kind],
    ["architecture", orDash(s.architecture)],
    ["name", orDash(s.name)],
    ["parameters", `${int(s.parameterCount)} (${shortCount(s.parameterCount)}) in ${int(s.tensorCount)} tensors`],
    ["tensor types", s.tensorTypes.map((t) => `${t.type} x${t.tensors}`).join(", ") || "-"],
    ["main type", `${orDash(s.mainType)}${s.fileType ? ` (file type ${s.fileType})` : ""}`],
  ];
  if (s.kind !== "lora-adapter") {
    rows.push(
      ["context length", orDash(s.contextLength)],
      ["embedding dim", orDash(s.embeddingLength)],
      ["layers", orDash(s.layers)],
      ["heads", s.heads === null ? "-" : `${s.heads}${s.headsKv !== null && s.headsKv !== s.heads ? ` (${s.headsKv} kv)` : ""}`],
      ["feed-forward", orDash(s.feedForwardLength)],
      ["vocab size", `${orDash(s.vocabSize)}${s.tokenizerModel ? ` (tokenizer ${s.tokenizerModel})` : ""}`],
      ["chat template", s.hasChatTemplate ? "yes" : "no"],
    );
  }
  const l = s.lora;
  rows.push([
    "LoRA adapter",
    l ? `yes, for ${orDash(l.architecture)}: alpha ${orDash(l.alpha)}, rank ${orDash(l.rank)}, ${l.tensorCount} tensors (${l.adaptedMatrices} matrices)` : "no",
  ]);
  rows.push([
    "trainer",
    s.trainerSupported ? `supports ${s.architecture}` : `does not support '${s.architecture ?? "unknown"}' (supports ${TRAINABLE_ARCHS.join(", ")})`,
  ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n");
}

/**
 * The recorded feedback as preference datasets in Hugging Face TRL's documented formats, one
 * JSON object per line, for training elsewhere (TRL's KTOTrainer / DPOTrainer, Axolotl,
 * OpenRLHF...):
 *
 * - KTO ("unpaired preference"): `{"prompt": [...messages], "completion": [{"role": "assistant", ...}], "label": true|false}`
 *   for every main turn whose reward is +1 (label true) or −1 (false); the reward is the thumbs,
 *   else the judge's majority vote (rewardOf), so a turn with reward 0 or none is left out.
 * - DPO ("preference"): `{"prompt": [...messages], "chosen": [{"role": "assistant", ...}], "rejected": [{"role": "assistant", ...}]}`
 *   for every pair of a liked and a disliked answer to the same prompt (the same messages).
 *
 * Chat turns are conversational (messages: role + content strings; "developer" becomes "system";
 * an assistant's tool calls are `tool_calls: [{type: "function", function: {name, arguments}}]`
 * with the arguments parsed to an object when they are JSON, as transformers' chat templates
 * take them). Plain-text turns (POST /v1/completions) are TRL's standard format: prompt and
 * completion strings. Side turns (titles, summaries...) are not exported.
 */
import fs from "node:fs";
import { writeFileAtomicWith } from "../../../common/fs/atomicFile.js";
import { rewardOf, type Store } from "./store.js";
import type { TurnRecord } from "./records.js";
import { messageText, type ChatMessage } from "../api/chatTypes.js";

export const DATASET_FORMATS = ["jsonl", "kto", "dpo"] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];
export type TurnKind = "chat" | "completion";

/** A message as TRL / transformers' chat templates read it. */
export interface TrlMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  tool_calls?: Array<{ type: "function"; id?: string; function: { name: string; arguments: unknown } }>;
  tool_call_id?: string;
  name?: string;
}

export type TrlPrompt = TrlMessage[] | string;
export type TrlCompletion = TrlMessage[] | string;

export interface KtoExample {
  prompt: TrlPrompt;
  completion: TrlCompletion;
  label: boolean;
}

export interface DpoExample {
  prompt: TrlPrompt;
  chosen: TrlCompletion;
  rejected: TrlCompletion;
}

export interface DatasetSummary {
  format: "kto" | "dpo";
  /** lines written */
  examples: number;
  /** main turns with reward +1 / −1 that were read */
  liked: number;
  disliked: number;
  /** distinct prompts among them */
  prompts: number;
  /** main turns left out: no reward, or reward 0 */
  unlabeled: number;
  /** which kinds of turns the file holds (TRL's `datasets` wants one per file) */
  kinds: TurnKind[];
  bytes: number;
}

export function trlMessage(m: ChatMessage): TrlMessage {
  const role = m.role === "developer" ? "system" : m.role;
  const out: TrlMessage = { role, content: messageText(m) };
  if (m.tool_calls?.length) {
    out.tool_calls = m.tool_calls.map((c) => ({ type: "function", id: c.id, function: { name: c.function.name, arguments: parseArgs(c.function.arguments) } }));
  }
  if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
  if (m.name) out.name = m.name;
  return out;
}

function parseArgs(a: string): unknown {
  try {
    const v = JSON.parse(a) as unknown;
    return typeof v === "object" && v !== null ? v : a;
  } catch {
    return a;
  }
}

interface Labeled {
  kind: TurnKind;
  /** identity of the prompt: same key, same prompt */
  key: string;
  prompt: TrlPrompt;
  completion: TrlCompletion;
  label: boolean;
}

function labeled(turn: TurnRecord, reward: 1 | -1): Labeled {
  if (turn.format === "completion") {
    const prompt = turn.messages.map(messageText).join("");
    return { kind: "completion", key: `completion\u0000${prompt}`, prompt, completion: turn.text, label: reward === 1 };
  }
  const prompt = turn.messages.map(trlMessage);
  const answer: TrlMessage = { role: "assistant", content: turn.text };
  if (turn.toolCalls?.length)
    answer.tool_calls = turn.toolCalls.map((c) => ({ type: "function", id: c.id, function: { name: c.name, arguments: parseArgs(c.arguments) } }));
  return { kind: "chat", key: `chat\u0000${JSON.stringify(prompt)}`, prompt, completion: [answer], label: reward === 1 };
}

/** Main turns with a ±1 reward, in log order; `only` keeps one kind. */
function collect(store: Store, only?: TurnKind): { items: Labeled[]; unlabeled: number } {
  const items: Labeled[] = [];
  let unlabeled = 0;
  for (const e of store.turnEntries()) {
    if (e.type !== "main") continue;
    const r = rewardOf(e).reward;
    if (r !== 1 && r !== -1) {
      unlabeled++;
      continue;
    }
    const item = labeled(store.readTurn(e.turnId), r);
    if (only && item.kind !== only) continue;
    items.push(item);
  }
  return { items, unlabeled };
}

/** The KTO examples (every labeled main turn) or the DPO pairs (each liked × each disliked answer of one prompt). */
export function datasetExamples(
  store: Store,
  format: "kto" | "dpo",
  only?: TurnKind,
): { examples: Array<KtoExample | DpoExample>; items: Labeled[]; used: Labeled[]; unlabeled: number } {
  const { items, unlabeled } = collect(store, only);
  if (format === "kto") return { examples: items.map(({ prompt, completion, label }) => ({ prompt, completion, label })), items, used: items, unlabeled };
  const groups = new Map<string, { liked: Labeled[]; disliked: Labeled[] }>();
  for (const it of items) {
    const g = groups.get(it.key) ?? { liked: [], disliked: [] };
    (it.label ? g.liked : g.disliked).push(it);
    groups.set(it.key, g);
  }
  const examples: DpoExample[] = [];
  const used: Labeled[] = [];
  for (const g of groups.values()) {
    if (g.liked.length === 0 || g.disliked.length === 0) continue;
    used.push(...g.liked, ...g.disliked);
    for (const c of g.liked) for (const r of g.disliked) examples.push({ prompt: c.prompt, chosen: c.completion, rejected: r.completion });
  }
  return { examples, items, used, unlabeled };
}

/** Writes a KTO or DPO dataset as JSON Lines: temp file, fsync, rename (whole or absent). */
export function exportDataset(store: Store, format: "kto" | "dpo", outFile: string, opts: { only?: TurnKind } = {}): DatasetSummary {
  const { examples, items, used, unlabeled } = datasetExamples(store, format, opts.only);
  return writeFileAtomicWith(outFile, 0o600, (fd) => {
    let bytes = 0;
    for (const ex of examples) {
      const buf = Buffer.from(`${JSON.stringify(ex)}\n`, "utf8");
      fs.writeFileSync(fd, buf);
      bytes += buf.length;
    }
    return {
      format,
      examples: examples.length,
      liked: items.filter((i) => i.label).length,
      disliked: items.filter((i) => !i.label).length,
      prompts: new Set(items.map((i) => i.key)).size,
      unlabeled,
      kinds: [...new Set(used.map((i) => i.kind))].sort(),
      bytes,
    };
  });
}

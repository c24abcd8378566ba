/**
 * The app's words for its technical terms, in one place: each label is what a user reads, and
 * `term` is the exact name (the README's glossary, the docs, the CLI) shown beside it in a small
 * details line or a tooltip for those who want it.
 */
export interface Term {
  /** Plain words, as the user reads them. */
  label: string;
  /** The exact term: "LoRA rank", "KL to the base model". */
  term: string;
}

export const terms = {
  // Settings › Learning
  learningMethod: { label: "How it learns from you", term: "learning method" },
  batchSize: { label: "Answers per lesson", term: "batch size" },
  learningRate: { label: "How big each learning step is", term: "learning rate" },
  loraRank: { label: "How much the assistant can change per lesson", term: "LoRA rank" },
  klBeta: { label: "How strongly it is held close to the original model", term: "KL anchor β" },
  heldBackShare: { label: "Conversations kept aside to check what it learned (%)", term: "held-back share" },
  teacherSource: { label: "Who shows it how your hint should change the answer", term: "hint teacher (OPD)" },
  autoLearn: { label: "Learn by itself when enough answers are ready", term: "auto-learn, one batch of samples" },
  // Settings › Judge
  judgeVotes: { label: "How many times each answer is judged", term: "judge votes" },
  judgeSource: { label: "Who judges the answers", term: "judge source" },
  // Settings › Outside clients
  outsideTurnType: { label: "Learn from other apps' messages that name a conversation but not its kind", term: "default turn type: main (trained) or side" },
  headerless: { label: "Learn from apps that send no conversation details", term: "headerless turns are main turns" },
  // Training
  now: { label: "Now", term: "learner state" },
  backend: { label: "Learning on", term: "trainer backend" },
  samplesWaiting: { label: "Answers ready to learn from", term: "samples waiting" },
  judgeQueue: { label: "Answers waiting for the judge", term: "judge queue" },
  serving: { label: "Answering with", term: "serving adapter" },
  lastSwap: { label: "Pause at the last update", term: "last swap pause" },
  meanReward: { label: "How well answers were rated", term: "mean reward" },
  loss: { label: "Training error", term: "loss" },
  klServing: { label: "Change per lesson", term: "KL to the serving policy" },
  drift: { label: "Distance from the original model", term: "drift: KL to the base model" },
  driftBudget: { label: "most allowed", term: "drift (KL) budget" },
  gate: { label: "Safety check", term: "publish gate" },
  heldBackTurns: { label: "conversations kept aside", term: "held-back turns" },
  // Table columns (short: the exact term is the heading's tooltip)
  colVersion: { label: "Version", term: "checkpoint: a saved adapter" },
  colSamples: { label: "Answers", term: "samples trained on" },
  colReward: { label: "Rating", term: "mean reward" },
  colKl: { label: "Change", term: "KL to the serving policy" },
  colGate: { label: "Safety check", term: "publish gate verdict" },
} satisfies Record<string, Term>;

/** "How much the assistant can change per lesson" with its details line "LoRA rank 16". */
export function termDetail(t: Term, value?: string | number | null): string {
  return value === undefined || value === null || value === "" ? t.term : `${t.term} ${value}`;
}

/** Label and exact term in one line for a tooltip or an aria label: "Safety check (publish gate)". */
export function termTitle(t: Term): string {
  return `${t.label} (${t.term})`;
}

/** A table heading with the exact term as its tooltip. */
export function column(t: Term): { label: string; title: string } {
  return { label: t.label, title: t.term };
}

/** The assistant's engine, as messages name the local core process. */
export const engineName = "the assistant's engine";

/**
 * The trainer's backend and device in words: "Learning on the CPU (WebAssembly, 1 thread)",
 * "Learning on the GPU: RTX 4090 (tfjs-node-gpu)"; the exact figures stay in the brackets.
 */
export function backendWords(backend: string | null, device: string | null): { text: string; detail: string } {
  // "wasm (simd, 2 threads)" already names its backend; "wasm, CPU" does not.
  const exact = !backend ? (device ?? "") : !device ? backend : device.toLowerCase().startsWith(backend.toLowerCase()) ? device : `${backend}, ${device}`;
  if (!backend && !device) return { text: "Not started yet (starts with the first lesson)", detail: "trainer backend" };
  const b = (backend ?? device ?? "").toLowerCase();
  const threads = /(\d+) threads?/.exec(device ?? "")?.[1];
  const t = threads ? `, ${threads} thread${threads === "1" ? "" : "s"}` : "";
  if (b.startsWith("wasm")) return { text: `the CPU (WebAssembly${t})`, detail: exact };
  if (b.includes("gpu") || b.includes("webgpu") || b.includes("cuda")) {
    const name = device && !device.toLowerCase().startsWith(b) ? `: ${device}` : "";
    return { text: `the GPU${name}`, detail: exact };
  }
  if (b.includes("cpu") || b.includes("node")) return { text: `the CPU${t}`, detail: exact };
  return { text: backend ?? device ?? "", detail: exact };
}

/** The judges' votes in words: +1 good, −1 bad, 0 neutral, null no verdict. */
export function votesWords(scores: (number | null)[]): { text: string; label: string } {
  if (scores.length === 0) return { text: "", label: "" };
  const good = scores.filter((s) => s !== null && s > 0).length;
  const bad = scores.filter((s) => s !== null && s < 0).length;
  const neutral = scores.filter((s) => s === 0).length;
  const none = scores.filter((s) => s === null).length;
  const parts = [good && `${good} good`, bad && `${bad} bad`, neutral && `${neutral} neutral`, none && `${none} no verdict`].filter(Boolean) as string[];
  const n = scores.length;
  const top =
    good >= bad && good >= neutral && good > 0
      ? ["good", good]
      : bad >= neutral && bad > 0
        ? ["bad", bad]
        : neutral > 0
          ? ["neutral", neutral]
          : ["no verdict", none];
  return { text: parts.join(", "), label: `${top[1]} of ${n} judge${n === 1 ? "" : "s"}: ${top[0]}${parts.length > 1 ? ` (${parts.join(", ")})` : ""}` };
}

/**
 * A preference check in a sentence: "Learned: on 12 conversations kept aside, it answers as if the
 * preference were said." The figures (gap, threshold, held-back turns) go in `detail`.
 */
export function preferenceCheckWords(c: { gap: number; turns: number; threshold: number; verdict: string }): { text: string; detail: string } {
  const n = `${c.turns} conversation${c.turns === 1 ? "" : "s"} kept aside`;
  const detail = `gap ${c.gap.toFixed(3)}, learned below ${c.threshold}, on ${c.turns} held-back turn${c.turns === 1 ? "" : "s"}`;
  if (c.turns === 0 || c.verdict === "too few turns")
    return { text: `Not checked yet: ${c.turns === 0 ? "no conversations were" : `only ${n} were`} kept aside to check it on.`, detail };
  if (c.verdict === "learned") return { text: `Learned: on ${n}, it answers as if the preference were said.`, detail };
  if (c.verdict === "forgotten") return { text: `Forgotten: it had learned this, but on ${n} it no longer answers that way.`, detail };
  return { text: `Not learned yet: on ${n}, it still needs the preference said.`, detail };
}

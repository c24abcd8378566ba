import { messageText, type ChatMessage } from "../api/chatTypes.js";
import { splitThinking } from "../api/thinking.js";

/** What the judge reads about one main turn. */
export interface JudgeInput {
  /** the turn's prompt messages (the conversation before the answer) */
  context: readonly ChatMessage[];
  /** the assistant's answer text as produced (a thinking model's `<think>…</think>` is left out of what the judge reads: visibleAnswer) */
  answer: string;
  /** tool calls the answer made */
  toolCalls?: ReadonlyArray<{ name: string; arguments: string }>;
  /** the next state: what the user / tools sent after the answer */
  nextState: readonly ChatMessage[];
}

/** Character budgets for the parts of a judge prompt (the context is trimmed from its start). */
export interface PromptBudget {
  context: number;
  answer: number;
  nextState: number;
}

export const DEFAULT_BUDGET: PromptBudget = { context: 6000, answer: 3000, nextState: 3000 };

/** Keeps the head and tail of a long text, marking the cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max < 40) return text.slice(0, max);
  const head = Math.floor(max * 0.6);
  const tail = max - head - 20;
  return `${text.slice(0, head)}\n[… ${text.length - head - tail} characters cut …]\n${text.slice(text.length - tail)}`;
}

function label(m: ChatMessage): string {
  if (m.role === "tool") return "tool result";
  return m.role;
}

function show(m: ChatMessage): string {
  let t = messageText(m);
  if (m.tool_calls?.length) t += `${t ? "\n" : ""}${m.tool_calls.map((c) => `(calls tool ${c.function.name} with ${c.function.arguments})`).join("\n")}`;
  return t;
}

/** The conversation before the answer, newest kept: whole messages from the end until the budget runs out. */
function renderContext(context: readonly ChatMessage[], budget: number): string {
  const parts: string[] = [];
  let used = 0;
  let i = context.length - 1;
  for (; i >= 0; i--) {
    const line = `[${label(context[i])}] ${show(context[i])}`;
    if (used + line.length > budget) {
      // The newest message is always shown, clipped if need be.
      if (parts.length === 0) {
        parts.unshift(clip(line, budget));
        i--;
      }
      break;
    }
    parts.unshift(line);
    used += line.length + 1;
  }
  if (i >= 0) parts.unshift(`[… ${i + 1} earlier message(s) left out …]`);
  return parts.join("\n");
}

/**
 * What the user saw as the answer: a thinking model's thought is not the answer (docs/method.md
 * "Thinking tokens"), so the judge rates the text after `</think>`; an answer cut inside its
 * thought says so.
 */
export function visibleAnswer(text: string): string {
  const { thought, thinking, answer } = splitThinking(text);
  if (thought === null) return text;
  return thinking ? "(the answer was cut off while the assistant was still thinking: nothing visible)" : answer;
}

function renderTurn(input: JudgeInput, b: PromptBudget): string {
  let answer = visibleAnswer(input.answer);
  if (input.toolCalls?.length) answer += `${answer ? "\n" : ""}${input.toolCalls.map((c) => `(calls tool ${c.name} with ${c.arguments})`).join("\n")}`;
  const next = input.nextState.map((m) => `[${label(m)}] ${show(m)}`).join("\n");
  return [
    "=== Conversation before the answer ===",
    renderContext(input.context, b.context) || "(none)",
    "",
    "=== The assistant's answer ===",
    clip(answer, b.answer) || "(empty)",
    "",
    "=== What came next ===",
    clip(next, b.nextState) || "(nothing)",
  ].join("\n");
}

const PRM_SYSTEM =
  "You grade a single reply of an AI assistant by looking at what happened right after it. " +
  "You never continue the conversation yourself; you only give a verdict.";

const PRM_TASK = `Decide what the message(s) after the answer show about it:
- progress: the user moves on to something new, thanks the assistant, or a tool the assistant called returned a normal result (a result exists because the assistant called the tool; a result without an error counts as progress);
- correction: the user wants it redone or changed, says what they actually meant, repeats the request in other words, complains, a tool returned an error caused by the assistant's call, or the user declined a tool call the assistant made (the call was unwanted; asking for a change counts as a correction);
- ambiguous: neither is clear.
Explain your reading in one or two sentences. Then finish with exactly one verdict: \\boxed{1} for progress, \\boxed{-1} for correction, \\boxed{0} for ambiguous.`;

const HINT_SYSTEM = "You help an AI assistant learn from the reaction to one of its replies. " + "You never continue the conversation yourself.";

const HINT_TASK = `Does what came after the answer reveal something concrete that would have made the answer better (a fact it missed, a preference, the wanted format or length, a mistake to avoid)?
If it does, write \\boxed{1}, then a hint of one to three sentences, addressed to the assistant, saying what to do differently, between [HINT_START] and [HINT_END].
If it does not, write \\boxed{-1} and no hint.`;

/** Messages for one process-reward vote (answer \boxed{1|-1|0}). */
export function prmMessages(input: JudgeInput, budget: PromptBudget = DEFAULT_BUDGET): ChatMessage[] {
  return [
    { role: "system", content: PRM_SYSTEM },
    { role: "user", content: `${renderTurn(input, budget)}\n\n=== Your task ===\n${PRM_TASK}` },
  ];
}

/** Messages for one hint-extraction vote (\boxed{1|-1} + [HINT_START]…[HINT_END]). */
export function hintMessages(input: JudgeInput, budget: PromptBudget = DEFAULT_BUDGET): ChatMessage[] {
  return [
    { role: "system", content: HINT_SYSTEM },
    { role: "user", content: `${renderTurn(input, budget)}\n\n=== Your task ===\n${HINT_TASK}` },
  ];
}

/** A smaller budget, for a judge whose context cannot hold the prompt. */
export function halve(b: PromptBudget): PromptBudget {
  return { context: Math.floor(b.context / 2), answer: Math.floor(b.answer / 2), nextState: Math.floor(b.nextState / 2) };
}

/**
 * A thinking model's answer begins with `<think>…</think>` (Qwen3, DeepSeek-R1). The thought is
 * not the answer: the chat shows it collapsed, the judge reads the answer after it
 * (judge/prompts.ts; docs/method.md "Thinking tokens"). Written once for both. While the closing
 * tag has not arrived the model is still thinking (or its answer was cut inside the thought).
 */
export function splitThinking(text: string): { thought: string | null; thinking: boolean; answer: string } {
  const m = /^\s*<think>([\s\S]*?)(<\/think>|$)/.exec(text);
  if (!m) return { thought: null, thinking: false, answer: text };
  return { thought: m[1].trim(), thinking: m[2] === "", answer: text.slice(m[0].length).replace(/^\s+/, "") };
}

import type { AnswerSpeed } from "../../format/turns.js";

/** "21.3 tok/s · 48 tokens · 0.33 s to first token", as local-model apps show under an answer. */
export function AnswerSpeedNote({ speed }: { speed: AnswerSpeed }) {
  const parts = [
    speed.tokensPerSecond !== null ? `${speed.tokensPerSecond.toFixed(1)} tok/s` : null,
    `${speed.tokens} token${speed.tokens === 1 ? "" : "s"}`,
    `${speed.firstTokenSeconds.toFixed(2)} s to first token`,
  ].filter(Boolean);
  return (
    <span className="small muted answer-speed" title="How fast this answer was written on this machine">
      {parts.join(" · ")}
    </span>
  );
}

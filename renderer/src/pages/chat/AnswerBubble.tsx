import { Markdown } from "../../components/Markdown.js";
import { ErrorNote } from "../../components/Notices.js";
import { ToolCallCard } from "../../components/ToolCallCard.js";
import type { Decision } from "../../chat/agentLoop.js";
import type { DisplayMessage } from "./displayMessage.js";

/** An answer's bubble: its tool steps (cards to allow or decline while it streams), its words, and how it ended. */
export function AnswerBubble({ msg, onDecide }: { msg: DisplayMessage; onDecide: (callId: string, d: Decision) => void }) {
  const waitingForUser = msg.steps?.some((s) => s.calls.some((c) => c.status === "waiting" || c.status === "running")) ?? false;
  return (
    <div className="bubble">
      {msg.steps?.map((s, i) => (
        <div key={i} className="tool-step">
          {s.text && <Markdown text={s.text} />}
          {s.calls.map((c) => (
            <ToolCallCard key={c.id} call={c} onDecide={msg.streaming ? (d) => onDecide(c.id, d) : undefined} />
          ))}
        </div>
      ))}
      {msg.content ? (
        <Markdown text={msg.content} streaming={msg.streaming} ended={!msg.streaming && !msg.error && !msg.stopped && !msg.steps?.length} />
      ) : msg.streaming ? (
        !waitingForUser && <span className="typing" aria-label="Answer is being written" />
      ) : (
        // An empty answer says so rather than leaving a blank bubble.
        !msg.error && !msg.stopped && !msg.steps?.length && <p className="small muted">The model ended its answer without writing anything.</p>
      )}
      {msg.stepLimit && <div className="small muted">The assistant reached its limit of tool steps for one answer, so it answered without more tools.</div>}
      {msg.stopped && <div className="small muted">Stopped.</div>}
      {msg.error && <ErrorNote error={msg.error} />}
    </div>
  );
}

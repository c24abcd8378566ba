/**
 * A recorded chat, read back: an answer that used tools is several turns in the core (each
 * request of the agent loop is one), and the turns after the first end with `tool` messages.
 * Those turns continue the answer before them: their prompt holds the calls and the results.
 */
import { messageText, type ChatMessage } from "../../../electron/core/api/chatTypes.js";
import type { SessionReply } from "../../../electron/core/api/sessions.js";
import { DECLINED, splitToolName } from "../api/tools.js";
import type { ToolCallView, ToolStep } from "./agentLoop.js";

/** Each turn's prompt messages as recorded (GET /api/sessions/:id turns[].messages), by turn id. */
export function turnMessages(reply: Pick<SessionReply, "turns">): Map<string, ChatMessage[]> {
  return new Map(reply.turns.map((t) => [t.turnId, t.messages]));
}

/**
 * The tool steps a turn's prompt carries after the user's last message, when the prompt ends
 * with a tool result (the turn continues an answer); null for a turn that answers the user.
 */
export function toolStepsOf(messages: ChatMessage[] | undefined): ToolStep[] | null {
  if (!messages?.length || messages[messages.length - 1].role !== "tool") return null;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const steps: ToolStep[] = [];
  for (const m of messages.slice(lastUser + 1)) {
    if (m.role === "assistant" && m.tool_calls?.length) {
      steps.push({
        text: messageText(m),
        calls: m.tool_calls.map((c): ToolCallView => ({
          id: c.id,
          name: c.function.name,
          ...splitToolName(c.function.name),
          arguments: c.function.arguments,
          status: "done",
          approval: null,
          result: null,
          truncated: false,
          ms: null,
        })),
      });
    } else if (m.role === "tool") {
      const call = steps.flatMap((s) => s.calls).find((c) => c.id === m.tool_call_id);
      if (!call) continue;
      const text = messageText(m);
      call.result = text;
      if (text === DECLINED) call.status = "declined";
    }
  }
  return steps.length ? steps : null;
}

/**
 * A turn that continues an answer cut by the token limit: its prompt ends with that answer's text
 * (the chat's Continue), and its own text follows it.
 */
export function continuesCutAnswer(messages: ChatMessage[] | undefined): boolean {
  const last = messages?.[messages.length - 1];
  return last?.role === "assistant" && !last.tool_calls?.length && messageText(last) !== "";
}

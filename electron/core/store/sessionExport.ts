/**
 * One chat taken out of the app (GET /api/sessions/:id/export, `clawrl sessions export`): as JSON,
 * the whole tree with feedback and the adapter of each answer (api/sessions.ts SessionExport);
 * as Markdown, the branch shown, readable, with tool calls and attached files named.
 */
import { splitAttachments } from "../api/attachments.js";
import { messageText, type ChatMessage } from "../api/chatTypes.js";
import type { SessionExport, TurnView } from "../api/sessions.js";
import type { Store } from "./store.js";

export const SESSION_EXPORT_FORMATS = ["md", "json"] as const;
export type SessionExportFormat = (typeof SESSION_EXPORT_FORMATS)[number];

/** The chat as JSON (null: no such session). */
export function sessionExport(store: Store, sessionId: string, now = new Date()): SessionExport | null {
  const session = store.session(sessionId);
  if (!session) return null;
  return {
    format: "clawrl.session",
    version: 1,
    exportedAt: now.toISOString(),
    session,
    activePath: store.activePath(sessionId),
    turns: store.sessionTurns(sessionId).map((e) => store.turnView(e.turnId)),
  };
}

/** A byte count as people read it. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** A file name for the export: the title's letters and digits, else the session id. */
export function exportFileName(exp: Pick<SessionExport, "session">, format: SessionExportFormat): string {
  const base = (exp.session.title ?? "")
    .normalize("NFKD")
    .replace(/[^A-Za-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60);
  return `${base || `chat-${exp.session.id.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 40)}`}.${format}`;
}

/** The messages a turn added after what its parent turn's request and answer held. */
function newMessages(turn: TurnView, parent: TurnView | undefined): ChatMessage[] {
  const from = parent ? parent.messages.length + 1 : 0;
  return turn.messages.slice(Math.min(from, turn.messages.length));
}

function userBlock(m: ChatMessage, turn: TurnView): string[] {
  const text = messageText(m);
  const { typed, blocks } = splitAttachments(text);
  const out = ["### User", "", typed || "_(no text)_"];
  if (blocks.length) {
    out.push("");
    for (const b of blocks) {
      const stored = turn.attachments?.find((a) => a.id === b.id);
      const size = stored ? formatBytes(stored.size) : `${b.text.length} characters`;
      out.push(`- Attached: **${b.name}** (${size}${b.truncated ? ", cut to fit the context" : ""})`);
    }
  }
  return out;
}

function answerBlock(turn: TurnView): string[] {
  const out = [`### Assistant`, "", `_adapter ${turn.adapter}, model ${turn.model}${turn.stopped ? ", stopped by the user" : ""}_`, ""];
  out.push(turn.text.trim() || "_(no text)_");
  const calls = (turn as TurnView & { toolCalls?: Array<{ name: string; arguments: string }> }).toolCalls ?? [];
  for (const c of calls) out.push("", `- Tool call: \`${c.name}\` ${"`"}${c.arguments}${"`"}`);
  if (turn.answerEdit) out.push("", "_The user rewrote this answer:_", "", turn.answerEdit.text);
  if (turn.feedback?.thumbs || turn.feedback?.hint) {
    const parts = [turn.feedback.thumbs ? `thumbs ${turn.feedback.thumbs}` : null, turn.feedback.hint ? `hint: ${turn.feedback.hint}` : null].filter(Boolean);
    out.push("", `_Feedback: ${parts.join("; ")}_`);
  }
  return out;
}

/** The branch shown as Markdown: the title, then each message of the active path in order. */
export function sessionMarkdown(exp: SessionExport): string {
  const byId = new Map(exp.turns.map((t) => [t.turnId, t]));
  const lines = [`# ${exp.session.title ?? "Untitled chat"}`, "", `_Exported ${exp.exportedAt} from ClawRL (session ${exp.session.id}); the branch shown._`];
  const path = exp.activePath.map((id) => byId.get(id)).filter((t): t is TurnView => t !== undefined);
  for (const turn of path) {
    const parent = turn.parentTurnId ? byId.get(turn.parentTurnId) : undefined;
    for (const m of newMessages(turn, parent)) {
      if (m.role === "system" || m.role === "developer") continue;
      lines.push("");
      if (m.role === "user") lines.push(...userBlock(m, turn));
      else if (m.role === "tool") lines.push("### Tool result", "", "```", messageText(m).trim(), "```");
      else if (m.role === "assistant") {
        // an answer the client replayed that is not a recorded turn of this path (a tool step)
        lines.push("### Assistant", "", messageText(m).trim() || "_(no text)_");
        for (const c of m.tool_calls ?? []) lines.push("", `- Tool call: \`${c.function.name}\` \`${c.function.arguments}\``);
      }
    }
    lines.push("", ...answerBlock(turn));
  }
  return `${lines.join("\n")}\n`;
}

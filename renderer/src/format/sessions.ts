// The chat list's order and names over GET /api/sessions (the contract's SessionView).
import type { SessionsReply, SessionView } from "../../../electron/core/api/sessions.js";
import { epochOf } from "./time.js";

/** GET /api/sessions's chats, most recently active first. */
export function byLastActivity(r: SessionsReply): SessionView[] {
  return r.sessions.filter((s) => s.id).sort((a, b) => (epochOf(b.lastActivityAt) ?? 0) - (epochOf(a.lastActivityAt) ?? 0));
}

/** A chat's name in the list: its title, else "Untitled chat". */
export function titleOf(s: Pick<SessionView, "title">): string {
  return s.title || "Untitled chat";
}

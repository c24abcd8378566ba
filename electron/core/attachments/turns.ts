/**
 * A recorded turn's attached files: the blocks of its last user message (api/attachments.ts
 * splitAttachments) looked up in the attachment store. store/store.ts turnView fills
 * TurnView.attachments with it; the core moves a new chat's files to its session on the
 * chat's first turn (claimTurnAttachments).
 */
import { splitAttachments } from "../api/attachments.js";
import { messageText, type ChatMessage } from "../api/chatTypes.js";
import type { CoreEvents } from "../api/events.js";
import type { AttachmentView } from "../api/sessions.js";
import { viewOf } from "./service.js";
import path from "node:path";
import { AttachmentStore } from "./store.js";

/** The ids of the files attached to the last user message of `messages`. */
export function attachmentIdsOf(messages: readonly ChatMessage[]): string[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role !== "user") continue;
    const text = messageText(messages[i]);
    if (!text.includes("<attachment ")) return [];
    return splitAttachments(text).blocks.map((b) => b.id);
  }
  return [];
}

const stores = new Map<string, AttachmentStore>();
/** The attachment store of a data dir (`<data dir>/attachments`). */
export function attachmentStoreOf(dataDir: string): AttachmentStore {
  let s = stores.get(dataDir);
  if (!s) stores.set(dataDir, (s = new AttachmentStore(path.join(dataDir, "attachments"))));
  return s;
}

/** The stored files a turn's last user message carries (absent when none; a file no longer stored is left out). */
export function turnAttachments(dataDir: string, sessionId: string, messages: readonly ChatMessage[]): AttachmentView[] | undefined {
  const ids = attachmentIdsOf(messages);
  if (ids.length === 0) return undefined;
  const store = attachmentStoreOf(dataDir);
  const views: AttachmentView[] = [];
  for (const id of ids) {
    const a = store.get(id, sessionId);
    if (a) views.push(viewOf(a));
  }
  return views;
}

/** Moves a new chat's files (stored unsorted) to the session whose turn sent them. */
export function claimTurnAttachments(store: AttachmentStore, sessionId: string, messages: readonly ChatMessage[]): void {
  const ids = attachmentIdsOf(messages);
  if (ids.length > 0) store.claim(sessionId, ids);
}

/** What followSessions needs of the core's event bus (rollout/events.ts). */
export interface SessionEventSource {
  on<K extends "turn" | "sessionDeleted">(name: K, fn: (payload: CoreEvents[K]) => void): unknown;
}

/** Unsorted files (attached to a new chat, never sent) older than this are removed when the core starts. */
export const UNSORTED_KEEP_MS = 7 * 24 * 3600_000;

/**
 * Keeps the files with their chats: a new chat's files move to its session on its first turn,
 * a deleted chat's files go with it, and files never sent are dropped after a week.
 */
export function followSessions(store: AttachmentStore, bus: SessionEventSource, messagesOf: (turnId: string) => readonly ChatMessage[]): void {
  const warn = (what: string, err: unknown) => console.warn(`Attachments: ${what}: ${(err as Error)?.message ?? String(err)}`);
  try {
    store.pruneUnsorted(UNSORTED_KEEP_MS);
  } catch (err) {
    warn("could not prune unsent files", err);
  }
  bus.on("turn", ({ turn }) => {
    try {
      claimTurnAttachments(store, turn.sessionId, messagesOf(turn.turnId));
    } catch (err) {
      warn(`could not move the files of turn ${turn.turnId} to its chat`, err);
    }
  });
  bus.on("sessionDeleted", ({ sessionId }) => {
    try {
      store.removeSession(sessionId);
    } catch (err) {
      warn(`could not remove the files of deleted chat ${sessionId}`, err);
    }
  });
}

/** A chat's stored file, for its export: the view and where the file lies. */
export interface SessionAttachment {
  attachment: AttachmentView;
  /** the stored file (absent: its folder lost the file) */
  path: string | null;
  createdAt: string;
}

/**
 * Every file stored with a chat, oldest first, for the chat's export (a turn names its own in
 * TurnView.attachments; this also finds the files of branches no longer shown). Read-only: safe
 * while the app runs.
 */
export function sessionAttachments(dataDir: string, sessionId: string): SessionAttachment[] {
  const store = attachmentStoreOf(dataDir);
  return store.list(sessionId).map((a) => ({ attachment: viewOf(a), path: store.filePath(a), createdAt: a.createdAt }));
}

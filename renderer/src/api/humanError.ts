import { ApiError, messageOf } from "./client.js";

/**
 * A failure said for the person using the app: "not found" answers name internal ids
 * ("unknown turn 't-render-3'"), so they get the caller's plain words instead.
 */
export function humanError(e: unknown, whenNotFound: string): string {
  if (e instanceof ApiError && e.status === 404) return whenNotFound;
  return plainWords(messageOf(e));
}

/**
 * A message in the user's words: the local core process is "the assistant's engine" to them
 * ("the core is not answering" → "the assistant's engine is not answering").
 */
export function plainWords(message: string): string {
  return message.replace(/\b([Tt]he|[Tt]his) (ClawRL )?core\b/g, (_m, the: string) =>
    `${the} assistant's engine`.replace(/^This assistant's/, "The assistant's").replace(/^this assistant's/, "the assistant's"),
  );
}

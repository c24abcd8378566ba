import { ApiError, messageOf } from "./client.js";

/**
 * A failure said for the person using the app: "not found" answers name internal ids
 * ("unknown turn 't-render-3'"), so they get the caller's plain words instead.
 */
export function humanError(e: unknown, whenNotFound: string): string {
  if (e instanceof ApiError && e.status === 404) return whenNotFound;
  return messageOf(e);
}

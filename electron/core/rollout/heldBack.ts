import { createHash } from "node:crypto";

/**
 * The held-back slice: main turns that are never trained on, so the publish gate and the watch
 * on the served adapter can check a candidate on the user's own conversations it has not seen.
 *
 * Which turns: decided per turn, with no state, from a hash of the turn's session id and its
 * position in the session (its place in the log, fixed once written): the same turn is held back
 * on every start, whatever else happens. Not from the turn id itself: turn ids are random
 * UUIDs, while a client that names its sessions (OpenClaw, the eval, the tests) then gets the
 * same slice on every run, so a run with the same conversations trains on the same samples.
 */
export function isHeldBack(turn: { sessionId: string; index: number }, share: number): boolean {
  if (!(share > 0)) return false;
  const h = createHash("sha256").update(`clawrl-held-back\0${turn.sessionId}\0${turn.index}`).digest();
  return h.readUInt32BE(0) / 2 ** 32 < share;
}

import { InvalidInputError } from "../domainErrors.js";
import type { TurnType } from "../store/records.js";
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from "../api/sessions.js";

/** What a request said about its session, from headers first, then body fields. */
export interface RlFields {
  sessionId: string | null;
  turnType: TurnType | null;
  sessionDone: boolean;
  /** the client sent any rl header or body field (it speaks the rl-training-headers protocol) */
  speaksRl: boolean;
}

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  // Node lowercases incoming header names; accept any case from other callers.
  let v = headers[name];
  if (v === undefined) {
    const k = Object.keys(headers).find((h) => h.toLowerCase() === name);
    if (k !== undefined) v = headers[k];
  }
  if (Array.isArray(v)) v = v[0];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

function sessionIdFrom(v: unknown, where: string): string | null {
  if (v === undefined || v === null || v === "") return null;
  const s = typeof v === "number" && Number.isFinite(v) ? String(v) : v;
  if (typeof s !== "string" || !SESSION_ID_PATTERN.test(s)) throw new InvalidInputError(`${where} must be ${SESSION_ID_RULE}`, { param: "session_id" });
  return s;
}

function turnTypeFrom(v: unknown, where: string): TurnType | null {
  if (v === undefined || v === null || v === "") return null;
  const s = typeof v === "string" ? v.trim().toLowerCase() : v;
  if (s === "main" || s === "side") return s;
  throw new InvalidInputError(`${where} must be 'main' or 'side', got ${JSON.stringify(v)}`, { param: "turn_type" });
}

function doneFrom(v: unknown, where: string): boolean | null {
  if (v === undefined || v === null || v === "") return null;
  if (typeof v === "boolean") return v;
  // As String(v) reads a JSON value: a list as its items joined by commas, any other object as no flag.
  const text = typeof v === "string" || typeof v === "number" || typeof v === "bigint" ? String(v) : Array.isArray(v) ? v.join(",") : "[object Object]";
  const s = text.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(s)) return true;
  if (["0", "false", "no", "off"].includes(s)) return false;
  throw new InvalidInputError(`${where} must be one of 1, true, yes, on (or 0, false, no, off), got ${JSON.stringify(v)}`, { param: "session_done" });
}

/** Headers win over body fields; a bad value is an InvalidInputError that names the field. */
export function readRlFields(headers: Headers, body: { session_id?: unknown; turn_type?: unknown; session_done?: unknown }): RlFields {
  const hSid = sessionIdFrom(header(headers, "x-session-id"), "X-Session-Id");
  const hType = turnTypeFrom(header(headers, "x-turn-type"), "X-Turn-Type");
  const hDone = doneFrom(header(headers, "x-session-done"), "X-Session-Done");
  const bSid = sessionIdFrom(body.session_id, "session_id");
  const bType = turnTypeFrom(body.turn_type, "turn_type");
  const bDone = doneFrom(body.session_done, "session_done");
  return {
    sessionId: hSid ?? bSid,
    turnType: hType ?? bType,
    sessionDone: hDone ?? bDone ?? false,
    speaksRl: [hSid, hType, hDone, bSid, bType, bDone].some((v) => v !== null),
  };
}

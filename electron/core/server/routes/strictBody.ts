import type { z } from "zod";
import { badRequest } from "../errors.js";

function paramOf(path: PropertyKey[]): string {
  let s = "";
  for (const p of path) s += typeof p === "number" ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s;
}

/**
 * Validates a /v1 request body against a strict schema, with the errors chat's parser gives
 * (openaiSchema.ts): an unknown field is a 400 "Unsupported or unknown field" naming it (code
 * unsupported_parameter); any other first problem a 400 naming its field (invalid_value).
 */
export function parseStrict<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("The request body must be a JSON object.", null, "invalid_request");
  return parseAt(schema, body, []);
}

/** As parseStrict, for a part of the body checked on its own (`at`: where it is, for the error's param). */
export function parseAt<S extends z.ZodType>(schema: S, value: unknown, at: PropertyKey[]): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  if (issue.code === "unrecognized_keys") {
    const param = paramOf([...at, ...issue.path, issue.keys[0]]);
    throw badRequest(`Unsupported or unknown field '${param}'.`, param, "unsupported_parameter");
  }
  const param = paramOf([...at, ...issue.path]);
  throw badRequest(`Invalid '${param}': ${issue.message}`, param || null, "invalid_value");
}

import { badRequest, type ApiError } from "./errors.js";

/**
 * Depth limits on request JSON (issue 26 F5): the code that renders prompts, compares messages
 * and builds grammars walks JSON recursively, and a value nested thousands deep overflows the
 * stack (a 500). Bodies are refused past MAX_BODY_DEPTH; tool-call `arguments`, JSON inside a
 * string, past MAX_ARGUMENTS_DEPTH. Real requests are a handful of levels deep.
 */
export const MAX_BODY_DEPTH = 64;
export const MAX_ARGUMENTS_DEPTH = 32;

/** Nesting depth of JSON text ([ and { outside strings), without parsing it; stops early past `limit`. */
export function jsonTextDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

/**
 * The first depth violation in a parsed body, or null. Iterative (an explicit stack), so a deep
 * body cannot overflow this check itself.
 */
export function bodyDepthError(body: unknown): ApiError | null {
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: body, depth: 0, path: "" }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > MAX_BODY_DEPTH) return badRequest(`The request body is nested more than ${MAX_BODY_DEPTH} levels deep.`, path || null, "nested_too_deep");
    for (const [k, child] of Object.entries(v)) {
      const p = path ? `${path}.${k}` : k;
      if (k === "arguments" && typeof child === "string" && jsonTextDepth(child, MAX_ARGUMENTS_DEPTH) > MAX_ARGUMENTS_DEPTH)
        return badRequest(`Tool-call arguments are nested more than ${MAX_ARGUMENTS_DEPTH} levels deep.`, p, "nested_too_deep");
      stack.push({ v: child, depth: depth + 1, path: p });
    }
  }
  return null;
}

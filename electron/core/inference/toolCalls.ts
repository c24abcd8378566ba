import type { ChatWrapper } from "node-llama-cpp";
import { llamaTextString } from "./chatPrompt.js";

/** How the chat template writes a function call, as plain strings (from the wrapper's settings). */
export interface ToolCallSyntax {
  /** Every prefix that opens a call (the first is the canonical one). */
  prefixes: string[];
  /** Between the function name and its arguments. May hold `{{functionName}}`. */
  paramsPrefix: string;
  /** After the arguments. May hold `{{functionName}}`. */
  suffix: string;
  /** Opens a group of parallel calls (Qwen: none; some templates: a section token). */
  sectionPrefix: string;
  emptyArguments: string;
}

export function toolCallSyntax(wrapper: ChatWrapper): ToolCallSyntax {
  const call = wrapper.settings.functions.call;
  const prefix = llamaTextString(call.prefix);
  const alternates = (call.prefixAlternateMatches ?? []).map((p) => llamaTextString(p)).filter((p) => p && p !== prefix);
  const placeholder = call.emptyCallParamsPlaceholder;
  return {
    prefixes: [prefix, ...alternates],
    paramsPrefix: llamaTextString(call.paramsPrefix),
    suffix: llamaTextString(call.suffix),
    sectionPrefix: llamaTextString(wrapper.settings.functions.parallelism?.call.sectionPrefix ?? ""),
    emptyArguments: placeholder === undefined || placeholder === "" ? "{}" : JSON.stringify(placeholder),
  };
}

export interface ParsedCall {
  name: string | null;
  /** Argument text so far (the whole JSON once `complete`). */
  arguments: string;
  complete: boolean;
}

export interface ParsedAnswer {
  /** Text before the first call. When not final, a tail that may start a call is held back. */
  content: string;
  calls: ParsedCall[];
  /** Offset in the text just past the last complete call (where generation may stop). */
  endOfCalls: number;
}

/** Index just past one JSON value starting at `i` (after whitespace), or -1 when incomplete/invalid. */
export function jsonValueEnd(s: string, i: number): number {
  while (i < s.length && /\s/.test(s[i])) i++;
  if (i >= s.length) return -1;
  const c = s[i];
  if (c === "{" || c === "[") {
    let depth = 0;
    let inString = false;
    for (let k = i; k < s.length; k++) {
      const ch = s[k];
      if (inString) {
        if (ch === "\\") k++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "{" || ch === "[") depth++;
      else if (ch === "}" || ch === "]") {
        depth--;
        if (depth === 0) return k + 1;
      }
    }
    return -1;
  }
  if (c === '"') {
    for (let k = i + 1; k < s.length; k++) {
      if (s[k] === "\\") k++;
      else if (s[k] === '"') return k + 1;
    }
    return -1;
  }
  const m = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(s.slice(i));
  // A number or literal at the very end may still grow: incomplete.
  return m && i + m[0].length < s.length ? i + m[0].length : -1;
}

/** Length of the longest suffix of `text` that is a proper, non-empty prefix of `marker`. */
function partialTail(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) if (text.endsWith(marker.slice(0, n))) return n;
  return 0;
}

function findPrefix(text: string, from: number, syntax: ToolCallSyntax): { at: number; len: number } | null {
  let best: { at: number; len: number } | null = null;
  for (const p of syntax.prefixes) {
    if (!p) continue;
    const at = text.indexOf(p, from);
    if (at >= 0 && (!best || at < best.at)) best = { at, len: p.length };
  }
  return best;
}

/**
 * Splits a (possibly partial) answer into content and function calls. Re-run on the whole text
 * at each step: what it returns only grows, so a stream can send the difference.
 */
export function parseAnswer(text: string, syntax: ToolCallSyntax, final: boolean): ParsedAnswer {
  const first = findPrefix(text, 0, syntax);
  if (!first) {
    let hold = 0;
    if (!final) for (const p of [...syntax.prefixes, syntax.sectionPrefix]) if (p) hold = Math.max(hold, partialTail(text, p));
    return { content: text.slice(0, text.length - hold), calls: [], endOfCalls: -1 };
  }
  let contentEnd = first.at;
  if (syntax.sectionPrefix && text.slice(0, contentEnd).endsWith(syntax.sectionPrefix)) contentEnd -= syntax.sectionPrefix.length;
  const content = text.slice(0, contentEnd).trimEnd();

  const calls: ParsedCall[] = [];
  let endOfCalls = -1;
  let pos: { at: number; len: number } | null = first;
  while (pos) {
    let i = pos.at + pos.len;
    const call: ParsedCall = { name: null, arguments: "", complete: false };
    calls.push(call);
    const [pp1, pp2] = syntax.paramsPrefix.split("{{functionName}}");
    const ppAt = text.indexOf(pp1, i);
    if (ppAt < 0) break;
    call.name = text.slice(i, ppAt).trim();
    i = ppAt + pp1.length;
    if (pp2 !== undefined) {
      const expect = call.name + pp2;
      if (!text.startsWith(expect, i)) break;
      i += expect.length;
    }
    const suffix = syntax.suffix.replaceAll("{{functionName}}", call.name);
    const end = jsonValueEnd(text, i);
    if (end < 0) {
      // No complete JSON yet: an empty-argument call closes straight with the suffix.
      if (suffix && text.startsWith(suffix, i)) {
        call.arguments = syntax.emptyArguments;
        call.complete = true;
        endOfCalls = i + suffix.length;
      } else {
        const rest = text.slice(i);
        call.arguments = final ? rest : rest.slice(0, rest.length - partialTail(rest, suffix));
        break;
      }
    } else {
      call.arguments = text.slice(i, end).trim();
      let j = end;
      while (j < text.length && /\s/.test(text[j]) && !suffix.startsWith(text.slice(end, j + 1))) j++;
      if (suffix && !text.startsWith(suffix, j)) break;
      call.complete = true;
      endOfCalls = j + suffix.length;
    }
    pos = findPrefix(text, endOfCalls, syntax);
  }
  return { content, calls, endOfCalls };
}

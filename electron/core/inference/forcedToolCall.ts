import type { LlamaGrammar, Token } from "node-llama-cpp";
import type { FunctionTool } from "./chatPrompt.js";
import type { Engine } from "./engine.js";
import { GrammarMatcher } from "./grammarMatcher.js";
import { JsonObjectPrefix } from "./jsonPrefix.js";
import { jsonValueEnd } from "./toolCalls.js";

/** Follows JSON text far enough to say whether its end is inside a string. */
export class JsonStringScan {
  inString = false;
  private escaped = false;

  push(text: string): this {
    for (const ch of text) {
      if (this.escaped) this.escaped = false;
      else if (this.inString && ch === "\\") this.escaped = true;
      else if (ch === '"') this.inString = !this.inString;
    }
    return this;
  }
}

/** True once `text` holds one whole JSON value (an answer held to a JSON grammar ends there). */
export function jsonComplete(text: string): boolean {
  const t = text.trimEnd();
  return t.length > 0 && jsonValueEnd(t, 0) === t.length;
}

/**
 * A tool call the request forces (tool_choice "required" or a named function): the call's
 * syntax is forced token by token, the function name is constrained to a declared one, and the
 * arguments are held to the tool's `parameters` schema (a grammar; without parameters, to a JSON
 * object closed after a token budget), so even a model that never learned the syntax produces a
 * well-formed call. Only the argument tokens the model chose among several count against
 * max_tokens (not the syntax, the name or what the schema fixes): a small budget
 * cuts the arguments (finish "length", the call so far), never the call itself. With
 * "required" and parallel calls allowed, the model may open another call after each one.
 */
export class ForcedToolCall {
  private phase: "name" | "args" | "suffix" | "more" | "done" = "name";
  private forced: number[] = [];
  private nameText = "";
  private readonly calls: Array<{ name: string | null; args: string }> = [];
  /** The current call's sampled argument tokens, detokenized together (a character may span tokens). */
  private argIds: number[] = [];
  private json = JsonObjectPrefix.afterOpenBrace();
  private matcher: GrammarMatcher | null = null;
  private reserve = 16;
  /** Argument tokens the model chose, over all calls (max_tokens bounds them together). */
  private argTokens = 0;
  private readonly targets: string[];
  private readonly pp: string;
  /** After a call: the token sequences that open another one. */
  private readonly openers: number[][];
  private static readonly MAX_CALLS = 4;

  constructor(
    private readonly engine: Engine,
    private readonly tools: FunctionTool[],
    private readonly choice: "required" | { name: string },
    private readonly opts: { grammars: Map<string, { grammar: LlamaGrammar; reserve: number }>; budget: number; parallel: boolean },
    /** The model opened the call itself and wrote this much of the name. */
    openedName?: string,
  ) {
    const { prefixes, paramsPrefix } = engine.syntax;
    this.pp = paramsPrefix.split("{{functionName}}")[0];
    this.targets = tools.map((t) => t.name + this.pp);
    this.openers = opts.parallel ? [prefixes[0], "\n" + prefixes[0]].map((p) => this.tokenize(p)).filter((t) => t.length > 0) : [];
    if (openedName === undefined) this.startCall(false);
    else {
      this.startCall(true);
      this.nameText = openedName;
      this.takeName();
    }
  }

  /** A whole name written: on to its arguments. */
  private takeName(): void {
    const hit = this.targets.findIndex((target) => this.nameText.startsWith(target));
    if (hit < 0) return;
    this.current.name = this.tools[hit].name;
    const rest = this.nameText.slice(this.targets[hit].length);
    this.current.args = "{";
    if (rest !== "{") this.forced.push(...this.tokenize("{"));
    this.enterArgs(this.tools[hit].name);
  }

  private tokenize(s: string): number[] {
    return this.engine.model.tokenize(s, true);
  }

  /** `opened`: the call's prefix was already written (the model chose to open another call). */
  private startCall(opened: boolean): void {
    const prefix = opened ? "" : this.engine.syntax.prefixes[0];
    if (typeof this.choice === "object") {
      this.forced.push(...this.tokenize(prefix + this.choice.name + this.pp + "{"));
      this.nameText = this.choice.name + this.pp;
      this.calls.push({ name: this.choice.name, args: "{" });
      this.enterArgs(this.choice.name);
    } else {
      if (prefix) this.forced.push(...this.tokenize(prefix));
      this.nameText = "";
      this.calls.push({ name: null, args: "" });
      this.phase = "name";
    }
  }

  private enterArgs(name: string): void {
    this.phase = "args";
    this.argIds = [];
    const g = this.opts.grammars.get(name);
    this.matcher = g ? new GrammarMatcher(this.engine.model, g.grammar) : null;
    this.reserve = g?.reserve ?? 8;
    this.json = JsonObjectPrefix.afterOpenBrace();
    if (this.matcher) for (const t of this.tokenize("{")) this.matcher.accept(t);
  }

  /** Parallel calls allowed, fewer than the most, and half the budget left (another call must have room to close). */
  private mayOpenAnother(): boolean {
    return this.openers.length > 0 && this.calls.length < ForcedToolCall.MAX_CALLS && this.argTokens < this.opts.budget / 2;
  }

  private get current(): { name: string | null; args: string } {
    return this.calls[this.calls.length - 1];
  }

  get finished(): boolean {
    return this.phase === "done" && this.forced.length === 0;
  }

  /** Every call opened is whole (an end-of-generation token may come now). */
  get complete(): boolean {
    return (this.phase === "done" || this.phase === "more") && this.forced.length === 0;
  }

  /** The arguments used the whole budget without closing. */
  get overBudget(): boolean {
    return this.phase === "args" && this.argTokens >= this.opts.budget;
  }

  /** Near the budget: closing tokens are favoured (the grammar keeps them where they fit). */
  get closing(): boolean {
    return this.phase === "args" && this.argTokens >= this.opts.budget - Math.min(this.reserve, Math.floor(this.opts.budget / 2));
  }

  /** The arguments so far end inside a string. */
  get inString(): boolean {
    return this.phase === "args" && new JsonStringScan().push(this.current.args).inString;
  }

  /** The next token to force, or null to sample (constrained by `allows`). */
  nextForced(): number | null {
    return this.forced.length > 0 ? this.forced[0] : null;
  }

  allows(token: number): boolean {
    const eog = this.engine.model.isEogToken(token as Token);
    if (this.phase === "more") return eog || this.openers.some((o) => o[0] === token);
    if (eog || this.engine.isSpecialToken(token)) return false;
    const t = this.engine.tokenText(token);
    if (!t) return false;
    if (this.phase === "name") {
      const s = this.nameText + t;
      return this.targets.some((target) => target.startsWith(s) || (s.startsWith(target) && s.length - target.length <= 1 && s.endsWith("{")));
    }
    if (this.phase === "args") return this.matcher ? this.matcher.allows(token) : this.json.clone().pushText(t);
    return false;
  }

  /** `free`: the model chose the token among several (only those count against the budget). */
  accept(token: number, free = true): void {
    if (this.forced.length > 0) {
      this.forced.shift();
      if (this.forced.length === 0 && this.phase === "suffix") this.phase = this.mayOpenAnother() ? "more" : "done";
      return;
    }
    if (this.phase === "more") {
      if (this.engine.model.isEogToken(token as Token)) {
        this.phase = "done";
        return;
      }
      const opener = this.openers.find((o) => o[0] === token) ?? [token];
      this.forced.push(...opener.slice(1));
      this.startCall(true);
      return;
    }
    const t = this.engine.tokenText(token);
    if (this.phase === "name") {
      this.nameText += t;
      this.takeName();
      return;
    }
    if (this.phase === "args") {
      this.argIds.push(token);
      this.current.args = "{" + this.engine.model.detokenize(this.argIds as Token[]);
      // What the schema fixes (keys, punctuation) is syntax, like the call's: not charged.
      if (free) this.argTokens++;
      if (this.matcher) {
        this.matcher.accept(token);
        if (jsonComplete(this.current.args)) this.finishArgs("");
      } else {
        this.json.pushText(t);
        if (this.json.done) this.finishArgs("");
        else if (this.argTokens >= Math.min(48, this.opts.budget)) this.finishArgs(this.json.closer());
      }
    }
  }

  private finishArgs(closer: string): void {
    this.current.args += closer;
    const suffix = this.engine.syntax.suffix.replaceAll("{{functionName}}", this.current.name ?? "");
    this.forced.push(...this.tokenize(closer + suffix));
    this.phase = "suffix";
    if (this.forced.length === 0) this.phase = this.mayOpenAnother() ? "more" : "done";
  }

  partialCalls(): Array<{ name: string | null; arguments: string }> {
    // An incomplete character at the end (a byte token of several) is held back: what streams only grows.
    const open = this.phase === "args" ? this.current : null;
    return this.calls.filter((c) => c.name !== null).map((c) => ({ name: c.name, arguments: c === open ? c.args.replace(/\uFFFD+$/, "") : c.args }));
  }
}

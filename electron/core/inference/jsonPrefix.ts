/**
 * Incremental JSON-object scanner for constrained decoding of forced tool-call arguments: it
 * says whether a character keeps the text a valid JSON prefix, and how to close the value
 * from any state (so a budget can end the arguments with valid JSON).
 */
type Mode = "key" | "keyString" | "colon" | "value" | "string" | "number" | "literal" | "after" | "done";

const NUMBER_PREFIX = /^-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?$/;
const NUMBER_FULL = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

export class JsonObjectPrefix {
  private stack: Array<"{" | "["> = ["{"];
  private mode: Mode = "key";
  private allowClose = true;
  private escape = false;
  private literal = "";
  private number = "";

  /** Starts after the opening `{`. */
  static afterOpenBrace(): JsonObjectPrefix {
    return new JsonObjectPrefix();
  }

  clone(): JsonObjectPrefix {
    const c = new JsonObjectPrefix();
    c.stack = this.stack.slice();
    c.mode = this.mode;
    c.allowClose = this.allowClose;
    c.escape = this.escape;
    c.literal = this.literal;
    c.number = this.number;
    return c;
  }

  get done(): boolean {
    return this.mode === "done";
  }

  /** Feeds a string; false (state unchanged meaning undefined) when it breaks JSON. */
  pushText(s: string): boolean {
    for (const ch of s) if (!this.push(ch)) return false;
    return true;
  }

  private closeTop(ch: string): boolean {
    const top = this.stack[this.stack.length - 1];
    if ((ch === "}" && top !== "{") || (ch === "]" && top !== "[")) return false;
    this.stack.pop();
    this.mode = this.stack.length === 0 ? "done" : "after";
    return true;
  }

  private push(ch: string): boolean {
    const ws = ch === " " || ch === "\n" || ch === "\t" || ch === "\r";
    switch (this.mode) {
      case "done":
        return false;
      case "key":
        if (ws) return true;
        if (ch === '"') {
          this.mode = "keyString";
          return true;
        }
        return ch === "}" && this.allowClose ? this.closeTop(ch) : false;
      case "keyString":
      case "string":
        if (this.escape) {
          if (!'"\\/bfnrtu'.includes(ch)) return false;
          this.escape = false;
          return true;
        }
        if (ch === "\\") this.escape = true;
        else if (ch === '"') this.mode = this.mode === "keyString" ? "colon" : "after";
        else if (ch < " ") return false;
        return true;
      case "colon":
        if (ws) return true;
        if (ch !== ":") return false;
        this.mode = "value";
        this.allowClose = false;
        return true;
      case "value":
        if (ws) return true;
        if (ch === "{" || ch === "[") {
          this.stack.push(ch);
          this.mode = ch === "{" ? "key" : "value";
          this.allowClose = true;
          return true;
        }
        if (ch === "]" && this.allowClose && this.stack[this.stack.length - 1] === "[") return this.closeTop(ch);
        if (ch === '"') {
          this.mode = "string";
          return true;
        }
        if (ch === "-" || (ch >= "0" && ch <= "9")) {
          this.mode = "number";
          this.number = ch;
          return true;
        }
        for (const lit of ["true", "false", "null"]) {
          if (lit[0] === ch) {
            this.mode = "literal";
            this.literal = lit.slice(1);
            return true;
          }
        }
        return false;
      case "literal":
        if (this.literal[0] !== ch) return false;
        this.literal = this.literal.slice(1);
        if (!this.literal) this.mode = "after";
        return true;
      case "number":
        if (NUMBER_PREFIX.test(this.number + ch)) {
          this.number += ch;
          return true;
        }
        if (!NUMBER_FULL.test(this.number)) return false;
        this.mode = "after";
        return this.push(ch);
      case "after":
        if (ws) return true;
        if (ch === ",") {
          this.mode = this.stack[this.stack.length - 1] === "{" ? "key" : "value";
          this.allowClose = false;
          return true;
        }
        return ch === "}" || ch === "]" ? this.closeTop(ch) : false;
    }
  }

  /** Text that closes the JSON value from the current state. */
  closer(): string {
    let s = "";
    switch (this.mode) {
      case "done":
        return "";
      case "key":
        s = this.allowClose ? "" : '"_": null';
        break;
      case "keyString":
        s = (this.escape ? "n" : "") + '": null';
        break;
      case "colon":
        s = ": null";
        break;
      case "value":
        s = this.allowClose && this.stack[this.stack.length - 1] === "[" ? "" : "null";
        break;
      case "string":
        s = (this.escape ? "n" : "") + '"';
        break;
      case "number":
        s = NUMBER_FULL.test(this.number) ? "" : "0"; // "1." / "1e" / "-" all become valid with a digit
        break;
      case "literal":
        s = this.literal;
        break;
      case "after":
        break;
    }
    for (let i = this.stack.length - 1; i >= 0; i--) s += this.stack[i] === "{" ? "}" : "]";
    return s;
  }
}

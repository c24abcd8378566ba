/**
 * Grammars that hold an answer to JSON while it is decoded: OpenAI's `response_format`
 * (`json_object`, `json_schema`) and a forced tool call's `parameters`. The schema is turned into
 * node-llama-cpp's GbnfJsonSchema (llama.cpp's GBNF through `llama.createGrammarForJsonSchema`);
 * a keyword that grammar cannot hold the answer to is refused by name (UnsupportedSchemaError)
 * rather than ignored, so a client never gets JSON that parses yet breaks its own schema.
 * Both completion routes use `grammarForResponseFormat`.
 */
import type { GbnfJsonSchema, Llama, LlamaGrammar } from "node-llama-cpp";

export class UnsupportedSchemaError extends Error {
  constructor(
    /** the JSON Schema keyword the grammar cannot express */
    readonly keyword: string,
    /** where it is, as a JSON pointer ("#/properties/age") */
    readonly at: string,
    detail = "",
  ) {
    super(`The JSON schema keyword '${keyword}' (at ${at}) cannot be enforced while decoding${detail ? `: ${detail}` : ""}.`);
    this.name = "UnsupportedSchemaError";
  }
}

/** Words that describe and change nothing an answer may hold: dropped. */
const ANNOTATIONS = new Set(["title", "description", "$schema", "$id", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly", "strict"]);
const STRING_FORMATS = new Set(["date-time", "time", "date"]);
const BASIC = new Set(["string", "number", "integer", "boolean", "null"]);
type Json = Record<string, unknown>;
/** A mutable GbnfJsonSchema under construction (the library's type is readonly and generic). */
type Out = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isScalar = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v);
const ANY: Out = { oneOf: [{ type: ["string", "number", "boolean", "null"] }, { type: "object", additionalProperties: true }, { type: "array" }] };

export interface ConvertOptions {
  /** Drop what the grammar cannot express instead of refusing it (tool parameters: a client's tool that works today keeps working). */
  lenient?: boolean;
}

/**
 * JSON Schema (the subset OpenAI's structured outputs use) → GbnfJsonSchema. Throws
 * UnsupportedSchemaError naming the first keyword that cannot be held while decoding.
 */
export function toGbnfJsonSchema(schema: unknown, opts: ConvertOptions = {}): GbnfJsonSchema {
  if (!isObject(schema)) throw new UnsupportedSchemaError("(schema)", "#", "the schema must be a JSON object");
  const rawDefs = { ...(isObject(schema.definitions) ? schema.definitions : {}), ...(isObject(schema.$defs) ? schema.$defs : {}) };
  const converter = new SchemaConverter(rawDefs, opts);
  const defs: Out = {};
  for (const [name, d] of Object.entries(rawDefs)) defs[name] = converter.convert(d, `#/$defs/${name}`);
  let root = converter.convert(schema, "#");
  if (Object.keys(defs).length > 0) {
    // $defs ride on an object, array or oneOf schema (node-llama-cpp's types).
    if (!("oneOf" in root) && root.type !== "object" && root.type !== "array") root = { oneOf: [root] };
    root = { ...root, $defs: defs };
  }
  return root as GbnfJsonSchema;
}

/** One schema's conversion: its definitions, and whether what cannot be held is refused or dropped. */
class SchemaConverter {
  constructor(
    private readonly rawDefs: Json,
    private readonly opts: ConvertOptions,
  ) {}

  private refuse(keyword: string, at: string, detail?: string): void {
    if (!this.opts.lenient) throw new UnsupportedSchemaError(keyword, at, detail);
  }

  convert(s: unknown, at: string): Out {
    if (s === true) return ANY;
    if (!isObject(s)) {
      this.refuse("(schema)", at, "a schema must be an object");
      return ANY;
    }
    const keys = Object.keys(s).filter((k) => !ANNOTATIONS.has(k) && !(at === "#" && (k === "$defs" || k === "definitions")));
    if (keys.length === 0) return ANY;
    return this.convertChoice(s, keys, at) ?? this.convertTyped(s, at);
  }

  /** A reference, an enum, a const or alternatives (anyOf / oneOf); undefined for a typed schema. */
  private convertChoice(s: Json, keys: string[], at: string): Out | undefined {
    const withNull = (o: Out): Out => (s.nullable === true ? { oneOf: [o, { type: "null" }] } : o);
    if (typeof s.$ref === "string") {
      const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(s.$ref);
      if (!m || !(m[2] in this.rawDefs)) {
        this.refuse("$ref", at, `only references to '#/$defs/<name>' are supported, not '${s.$ref}'`);
        return ANY;
      }
      return withNull({ $ref: `#/$defs/${m[2]}` });
    }
    if ("enum" in s) {
      const values = Array.isArray(s.enum) ? s.enum : [];
      if (values.length === 0 || !values.every(isScalar)) this.refuse("enum", at, "enum values must be strings, numbers, booleans or null");
      return withNull({ enum: values.filter(isScalar) });
    }
    if ("const" in s) {
      if (!isScalar(s.const)) this.refuse("const", at, "const must be a string, number, boolean or null");
      return withNull({ const: isScalar(s.const) ? s.const : null });
    }
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives === undefined) return undefined;
    const kw = s.anyOf !== undefined ? "anyOf" : "oneOf";
    if (!Array.isArray(alternatives) || alternatives.length === 0) {
      this.refuse(kw, at, "must be a non-empty array");
      return ANY;
    }
    const extra = keys.filter((k) => k !== kw && k !== "nullable");
    if (extra.length > 0) this.refuse(extra[0], at, `not supported beside ${kw}`);
    return withNull({ oneOf: alternatives.map((a, i) => this.convert(a, `${at}/${kw}/${i}`)) });
  }

  /** A schema by its type(s) (given, or inferred from its keywords). */
  private convertTyped(s: Json, at: string): Out {
    const nullable = s.nullable === true;
    const types = s.type === undefined ? inferTypes(s) : Array.isArray(s.type) ? s.type : [s.type];
    this.checkKeywords(s, types as string[], at);
    if (types.length === 0 || !types.every((t) => typeof t === "string" && (BASIC.has(t) || t === "object" || t === "array"))) {
      this.refuse("type", at, `unknown type ${JSON.stringify(s.type)}`);
      return ANY;
    }
    const shapes: Out[] = [];
    const basic = (types as string[]).filter((t) => BASIC.has(t) && t !== "string");
    if (basic.length > 0) shapes.push({ type: basic.length === 1 ? basic[0] : basic });
    for (const t of types as string[]) {
      if (t === "string") shapes.push(this.stringSchema(s, at));
      else if (t === "object") shapes.push(this.objectSchema(s, at));
      else if (t === "array") shapes.push(this.arraySchema(s, at));
    }
    if (nullable && !types.includes("null")) shapes.push({ type: "null" });
    return shapes.length === 1 ? shapes[0] : { oneOf: shapes };
  }

  /** Keywords no grammar here expresses (numeric ranges, patterns, combinators), and unknown ones. */
  private checkKeywords(s: Json, types: string[], at: string): void {
    const known = new Set([
      "type",
      "nullable",
      "properties",
      "required",
      "additionalProperties",
      "minProperties",
      "maxProperties",
      "items",
      "prefixItems",
      "minItems",
      "maxItems",
      "minLength",
      "maxLength",
      "format",
    ]);
    for (const k of Object.keys(s)) {
      if (ANNOTATIONS.has(k) || known.has(k) || (at === "#" && (k === "$defs" || k === "definitions"))) continue;
      // zod writes an integer's safe range as bounds; the grammar's integers (at most 16 digits) are that already, near enough.
      if (types.includes("integer") && ((k === "minimum" && s[k] === Number.MIN_SAFE_INTEGER) || (k === "maximum" && s[k] === Number.MAX_SAFE_INTEGER)))
        continue;
      this.refuse(k, at);
    }
  }

  private stringSchema(s: Json, at: string): Out {
    if (s.format !== undefined) {
      if (typeof s.format !== "string" || !STRING_FORMATS.has(s.format)) {
        this.refuse("format", at, `only date-time, time and date formats are supported, not ${JSON.stringify(s.format)}`);
        return { type: "string" };
      }
      if (s.minLength !== undefined || s.maxLength !== undefined) this.refuse("minLength", at, "not supported beside format");
      return { type: "string", format: s.format };
    }
    const out: Out = { type: "string" };
    for (const k of ["minLength", "maxLength"] as const) {
      if (s[k] === undefined) continue;
      if (!Number.isInteger(s[k]) || (s[k] as number) < 0) this.refuse(k, at, "must be a non-negative integer");
      else out[k] = s[k];
    }
    return out;
  }

  private objectSchema(s: Json, at: string): Out {
    const out: Out = { type: "object" };
    if (s.properties !== undefined) {
      if (!isObject(s.properties)) this.refuse("properties", at, "must be an object");
      else out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, this.convert(v, `${at}/properties/${k}`)]));
    }
    if (s.required !== undefined) {
      const props = isObject(s.properties) ? s.properties : {};
      if (!Array.isArray(s.required) || !s.required.every((r) => typeof r === "string" && r in props))
        this.refuse("required", at, "every required name must be one of properties");
      else out.required = s.required;
    }
    const ap = s.additionalProperties;
    // JSON Schema's default allows more properties; an answer with only the declared ones is valid either way.
    if (ap === true) out.additionalProperties = true;
    else if (isObject(ap) && Object.keys(ap).length > 0) out.additionalProperties = this.convert(ap, `${at}/additionalProperties`);
    else if (isObject(ap) || (ap === undefined && s.properties === undefined)) out.additionalProperties = true;
    for (const k of ["minProperties", "maxProperties"] as const) if (s[k] !== undefined) out[k] = s[k];
    return out;
  }

  private arraySchema(s: Json, at: string): Out {
    const out: Out = { type: "array" };
    if (s.items !== undefined && s.items !== true) out.items = this.convert(s.items, `${at}/items`);
    if (s.prefixItems !== undefined) {
      if (!Array.isArray(s.prefixItems)) this.refuse("prefixItems", at, "must be an array");
      else out.prefixItems = s.prefixItems.map((p, i) => this.convert(p, `${at}/prefixItems/${i}`));
    }
    for (const k of ["minItems", "maxItems"] as const) if (s[k] !== undefined) out[k] = s[k];
    return out;
  }
}

function inferTypes(s: Json): string[] {
  if ("properties" in s || "additionalProperties" in s || "required" in s) return ["object"];
  if ("items" in s || "prefixItems" in s) return ["array"];
  if ("minLength" in s || "maxLength" in s || "format" in s) return ["string"];
  return [];
}

const cache = new WeakMap<Llama, Map<string, Promise<LlamaGrammar>>>();
const CACHE_SIZE = 32;

function cached(llama: Llama, key: string, make: () => Promise<LlamaGrammar>): Promise<LlamaGrammar> {
  let m = cache.get(llama);
  if (!m) {
    m = new Map<string, Promise<LlamaGrammar>>();
    cache.set(llama, m);
  }
  let g = m.get(key);
  if (g) {
    m.delete(key);
    m.set(key, g); // most recently used last
    return g;
  }
  g = make();
  g.catch(() => m.delete(key));
  m.set(key, g);
  if (m.size > CACHE_SIZE) m.delete(m.keys().next().value!);
  return g;
}

/**
 * node-llama-cpp's number rules allow exponents of up to 16 digits: "3e3939393939" is JSON
 * whose value is Infinity, which no client's schema accepts (an integer is not even finite).
 * Integers get no exponent and other numbers one of at most two digits.
 */
export function finiteNumbers(gbnf: string): string {
  const longExponent = /\(\[eE\] \[-\+\]\? (?:\("0" \| \[1-9\] \[0-9\]\{0,15\}\)|\[0-9\] \[1-9\]\{0,15\})\)\?/g;
  return (
    gbnf
      .split("\n")
      // 15 digits at most: a safe integer (zod's int() refuses 16-digit ones past 2^53).
      .map((line) =>
        /^integer[\w-]*rule ::=/.test(line)
          ? line.replace(longExponent, "").replaceAll("[0-9]{0,15}", "[0-9]{0,14}")
          : line.replace(longExponent, "([eE] [-+]? [0-9]{1,2})?"),
      )
      .join("\n")
  );
}

async function finite(llama: Llama, grammar: Promise<LlamaGrammar>): Promise<LlamaGrammar> {
  const g = await grammar;
  return llama.createGrammar({ grammar: finiteNumbers(g.grammar), rootRuleName: g.rootRuleName });
}

/** A grammar for any JSON object (`response_format: {type: "json_object"}`). */
export function jsonObjectGrammar(llama: Llama): Promise<LlamaGrammar> {
  return cached(llama, "json", () => finite(llama, llama.getGrammarFor("json")));
}

/** A grammar for JSON valid against `schema` (throws UnsupportedSchemaError, before anything async, for what it cannot hold). */
export function jsonSchemaGrammar(llama: Llama, schema: unknown, opts: ConvertOptions = {}): Promise<LlamaGrammar> {
  const gbnf = toGbnfJsonSchema(schema, opts);
  const key = JSON.stringify(gbnf);
  // The schema is only known at run time; the generic (meant for literal schemas) cannot narrow it.
  return cached(llama, `schema:${key}`, () => finite(llama, llama.createGrammarForJsonSchema(gbnf as Readonly<{ type: "object" }>)));
}

/** OpenAI's `response_format`, as both completion routes accept it. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/** The grammar a response format holds the answer to; null for plain text. Throws UnsupportedSchemaError. */
export async function grammarForResponseFormat(llama: Llama, format: ResponseFormat | null | undefined): Promise<LlamaGrammar | null> {
  if (!format || format.type === "text") return null;
  if (format.type === "json_object" || !format.json_schema.schema) return jsonObjectGrammar(llama);
  return jsonSchemaGrammar(llama, format.json_schema.schema);
}

/**
 * Tokens a schema's answer may still need once it starts closing: counted in characters (a
 * token is at least one), its required keys with their quotes, colons and commas, and brackets.
 */
export function closingReserve(schema: unknown): number {
  let n = 0;
  const walk = (s: unknown, depth: number) => {
    if (!isObject(s) || depth > 8) return;
    n += 2;
    if (isObject(s.properties)) {
      const required = new Set(Array.isArray(s.required) ? s.required : []);
      for (const [k, v] of Object.entries(s.properties)) {
        if (!required.has(k)) continue;
        n += k.length + 5;
        walk(v, depth + 1);
      }
    }
    for (const k of ["anyOf", "oneOf"]) if (Array.isArray(s[k])) n += 4; // the shortest alternative, roughly
    if (Array.isArray(s.prefixItems)) for (const v of s.prefixItems) walk(v, depth + 1);
  };
  walk(schema, 0);
  return Math.min(256, 8 + n);
}

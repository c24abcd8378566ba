import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type OpenAI from "openai";
import type { APIError } from "openai";
import type { RunningCore } from "../../electron/core/core.js";
import { toGbnfJsonSchema, UnsupportedSchemaError } from "../../electron/core/inference/jsonSchemaGrammar.js";
import { startTinyCore } from "./helpers.js";

/** A schema with the shapes clients send: strings, an integer, a nested object, an array, an enum, a nullable field. */
const personSchema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 12 },
    age: { type: "integer" },
    pets: { type: "array", items: { type: "string", maxLength: 8 }, maxItems: 3 },
    mood: { type: "string", enum: ["happy", "sad"] },
    address: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
    nickname: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
  required: ["name", "age", "pets", "mood", "address", "nickname"],
  additionalProperties: false,
};

/** Checks `v` against the subset of JSON Schema above (what the grammar is meant to guarantee). */
function validate(schema: Record<string, unknown>, v: unknown, at = "$"): void {
  if (Array.isArray(schema.anyOf)) {
    const ok = (schema.anyOf as Record<string, unknown>[]).some((s) => {
      try {
        validate(s, v, at);
        return true;
      } catch {
        return false;
      }
    });
    assert.ok(ok, `${at}: ${JSON.stringify(v)} matches no alternative`);
    return;
  }
  if (schema.enum) assert.ok((schema.enum as unknown[]).includes(v), `${at}: ${JSON.stringify(v)} not in enum`);
  switch (schema.type) {
    case "null":
      assert.equal(v, null, at);
      break;
    case "string":
      assert.equal(typeof v, "string", at);
      if (typeof schema.maxLength === "number")
        // JSON Schema counts characters (code points), not UTF-16 units: a character past U+FFFF is 2 of those.
        assert.ok([...(v as string)].length <= schema.maxLength, `${at}: ${JSON.stringify(v)} longer than ${schema.maxLength}`);
      break;
    case "integer":
      assert.ok(Number.isInteger(v), `${at}: ${JSON.stringify(v)} is not an integer`);
      break;
    case "array":
      assert.ok(Array.isArray(v), at);
      if (typeof schema.maxItems === "number") assert.ok((v as unknown[]).length <= schema.maxItems, at);
      (v as unknown[]).forEach((x, i) => validate(schema.items as Record<string, unknown>, x, `${at}[${i}]`));
      break;
    case "object": {
      assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${at}: not an object`);
      const o = v as Record<string, unknown>;
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      for (const r of (schema.required as string[]) ?? []) assert.ok(r in o, `${at}: missing ${r}`);
      if (schema.additionalProperties === false) for (const k of Object.keys(o)) assert.ok(k in props, `${at}: unexpected ${k}`);
      for (const [k, s] of Object.entries(props)) if (k in o) validate(s, o[k], `${at}.${k}`);
      break;
    }
  }
}

describe("structured outputs (response_format) on /v1/chat/completions", () => {
  let core: RunningCore;
  let client: OpenAI;
  let modelId: string;
  before(async () => {
    ({ core, client, modelId } = await startTinyCore());
  });
  after(async () => {
    await core?.close();
  });

  const ask = (extra: Record<string, unknown>) =>
    client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "Describe a person as JSON." }],
      max_tokens: 300,
      ...extra,
    } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);

  it("json_schema: every answer parses and validates, greedy and sampled at temperatures up to 2", async () => {
    const rf = { type: "json_schema", json_schema: { name: "person", schema: personSchema, strict: true } };
    for (const [temperature, seed] of [
      [0, 1],
      [0.7, 2],
      [1, 3],
      [1.5, 4],
      [2, 5],
      [2, 6],
    ]) {
      const r = await ask({ response_format: rf, temperature, seed });
      const text = r.choices[0].message.content!;
      let parsed: unknown;
      assert.doesNotThrow(() => (parsed = JSON.parse(text)), `t=${temperature}: ${text}`);
      validate(personSchema, parsed);
      assert.equal(r.choices[0].finish_reason, "stop", text);
    }
  });

  it("json_object: the answer is one JSON object", async () => {
    for (const seed of [1, 2, 3]) {
      const r = await ask({ response_format: { type: "json_object" }, temperature: 1, seed });
      const v = JSON.parse(r.choices[0].message.content!);
      assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), r.choices[0].message.content!);
    }
  });

  it("json_schema with top_logprobs (sampled in JS) still validates, and streams as usual", async () => {
    const rf = { type: "json_schema", json_schema: { name: "person", schema: personSchema } };
    const r = await ask({ response_format: rf, temperature: 1, seed: 11, logprobs: true, top_logprobs: 2 });
    validate(personSchema, JSON.parse(r.choices[0].message.content!));
    const stream = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: "user", content: "JSON please" }],
      max_tokens: 300,
      temperature: 1.2,
      seed: 12,
      stream: true,
      response_format: rf,
    } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
    let text = "";
    let chunks = 0;
    for await (const c of stream) {
      const d = c.choices[0]?.delta?.content;
      if (d) {
        text += d;
        chunks++;
      }
    }
    assert.ok(chunks > 1, "streamed in pieces");
    validate(personSchema, JSON.parse(text));
  });

  it("/v1/completions takes response_format too: each prompt's text is JSON valid against the schema", async () => {
    const r = await client.completions.create({
      model: modelId,
      prompt: ["Once upon a time", "A person:"],
      max_tokens: 300,
      temperature: 1.4,
      seed: 3,
      response_format: { type: "json_schema", json_schema: { name: "person", schema: personSchema } },
    } as unknown as OpenAI.Completions.CompletionCreateParamsNonStreaming);
    assert.equal(r.choices.length, 2);
    for (const c of r.choices) validate(personSchema, JSON.parse(c.text));
    await assert.rejects(
      client.completions.create({
        model: modelId,
        prompt: "x",
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "number", multipleOf: 2 } } },
      } as unknown as OpenAI.Completions.CompletionCreateParamsNonStreaming),
      (err: APIError) => err.status === 400 && /'multipleOf'/.test(err.message),
    );
  });

  it("a schema the grammar cannot express is a 400 naming the keyword", async () => {
    const bad = { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } }, required: ["code"] };
    await assert.rejects(ask({ response_format: { type: "json_schema", json_schema: { name: "x", schema: bad } } }), (err: APIError) => {
      assert.equal(err.status, 400);
      assert.match(err.message, /'pattern'/);
      assert.match(err.message, /#\/properties\/code/);
      assert.equal((err.error as { param?: string }).param, "response_format.json_schema.schema");
      return true;
    });
    await assert.rejects(ask({ response_format: { type: "xml" } }), (err: APIError) => err.status === 400);
  });
});

describe("toGbnfJsonSchema", () => {
  it("refuses by name what it cannot hold, and keeps what it can", () => {
    for (const [schema, keyword] of [
      [{ type: "number", minimum: 3 }, "minimum"],
      [{ allOf: [{ type: "string" }] }, "allOf"],
      [{ type: "string", format: "email" }, "format"],
      [{ type: "object", properties: { a: { $ref: "#" } } }, "$ref"],
      [{ type: "array", uniqueItems: true }, "uniqueItems"],
    ] as const) {
      assert.throws(
        () => toGbnfJsonSchema(schema),
        (e: unknown) => e instanceof UnsupportedSchemaError && e.keyword === keyword,
        keyword,
      );
    }
    assert.deepEqual(toGbnfJsonSchema({ type: "string", format: "date" }), { type: "string", format: "date" });
    assert.deepEqual(toGbnfJsonSchema({ type: ["string", "null"] }), { oneOf: [{ type: "null" }, { type: "string" }] });
    // Tools are lenient: an unenforceable keyword is dropped, the rest kept.
    assert.deepEqual(toGbnfJsonSchema({ type: "number", minimum: 3 }, { lenient: true }), { type: "number" });
    // $defs/definitions references become #/$defs.
    const withDefs = toGbnfJsonSchema({ type: "object", properties: { p: { $ref: "#/definitions/P" } }, definitions: { P: { type: "boolean" } } });
    assert.deepEqual(withDefs, { type: "object", properties: { p: { $ref: "#/$defs/P" } }, $defs: { P: { type: "boolean" } } });
  });
});

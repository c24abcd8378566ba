import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadScenario, parseScenario, renderPrompt, ScenarioError } from "../../electron/core/eval/scenario.js";
import { makeScorer, matchRule, parseJudgeScore, reactionFor, ruleScore } from "../../electron/core/eval/rules.js";
import { repoRoot, tempDir } from "../helpers/cli.js";

const minimal = () => ({
  name: "t",
  template: { kind: "completion", text: "Story: {prompt}" },
  trainPrompts: ["a"],
  heldOutPrompts: ["b"],
  reactions: { rules: [{ when: { contains: "cat" }, react: { thumbs: "up" } }], otherwise: { thumbs: "down", hint: "add a cat" } },
  scorer: { kind: "rules", checks: [{ rule: { regex: "\\bcat\\b" } }] },
});

function rejects(value: unknown, re: RegExp) {
  assert.throws(
    () => parseScenario(value, "s.json"),
    (e: Error) => e instanceof ScenarioError && re.test(e.message) && !e.message.includes("\n"),
    `expected ${re}`,
  );
}

describe("eval scenario format", () => {
  it("fills defaults and renders completion and chat prompts", () => {
    const s = parseScenario(minimal());
    assert.equal(s.samplesPerPrompt, 4);
    assert.deepEqual(s.seeds, [1, 2, 3]);
    assert.equal(s.training.batchSize, 4);
    assert.deepEqual(renderPrompt(s, "Once"), { kind: "completion", prompt: "Story: Once" });
    const c = parseScenario({
      ...minimal(),
      template: {
        kind: "chat",
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "Q: {prompt}" },
        ],
      },
    });
    assert.deepEqual(renderPrompt(c, "hi"), {
      kind: "chat",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "Q: hi" },
      ],
    });
  });

  it("refuses bad scenarios with one line naming the path", () => {
    rejects({ ...minimal(), trainPrompts: [] }, /^s\.json: trainPrompts: /);
    rejects({ ...minimal(), heldOutPrompts: ["a"] }, /heldOutPrompts: held-out prompt also used for training: 'a'/);
    rejects({ ...minimal(), template: { kind: "completion", text: "no slot" } }, /template.text: the completion template must contain \{prompt\}/);
    rejects({ ...minimal(), template: { kind: "chat", messages: [{ role: "user", content: "x" }] } }, /a user message must contain \{prompt\}/);
    rejects({ ...minimal(), scorer: { kind: "rules", checks: [{ rule: { regex: "(" } }] } }, /invalid regex/);
    rejects({ ...minimal(), reactions: { rules: [] } }, /the user never reacts/);
    rejects({ ...minimal(), reactions: { rules: [], otherwise: {} } }, /a reaction needs thumbs, hint or next/);
    rejects({ ...minimal(), scorer: { kind: "judge", url: "not a url", prompt: "{answer}" } }, /scorer.url: the judge url must be a URL/);
    rejects({ ...minimal(), extra: 1 }, /extra/);
  });

  it("loads files and names unreadable or broken JSON", () => {
    const dir = tempDir("clawrl-eval-scn-");
    const bad = path.join(dir, "bad.json");
    fs.writeFileSync(bad, "{ nope");
    assert.throws(() => loadScenario(bad), /bad\.json: not valid JSON/);
    assert.throws(() => loadScenario(path.join(dir, "missing.json")), /missing\.json: cannot read: ENOENT/);
  });

  it("ships valid example scenarios", () => {
    const files = fs.readdirSync(path.join(repoRoot, "eval", "scenarios")).filter((f) => f.endsWith(".json"));
    assert.deepEqual(files.sort(), ["chat-short-answers.json", "stories-animals-preferences.json", "stories-animals.json", "stories-cats.json"]);
    for (const f of files) {
      const s = loadScenario(path.join(repoRoot, "eval", "scenarios", f));
      assert.ok(s.heldOutPrompts.length >= 3, f);
      // Hints as preferences in the prompt only where a scenario asks (issue 20).
      assert.equal(s.preferences, f === "stories-animals-preferences.json", f);
    }
  });

  it("the animals reader: thumbs up for an animal, thumbs down with the hint otherwise; the scorer agrees", async () => {
    const s = loadScenario(path.join(repoRoot, "eval", "scenarios", "stories-animals.json"));
    const score = makeScorer(s);
    for (const text of [" The little puppy ran home.", " Two birds sang.", " A Cat sat on the mat."]) {
      assert.deepEqual(reactionFor(s, text), { thumbs: "up" }, text);
      assert.equal(await score("p", text), 1, text);
    }
    for (const text of [" He played with his ball.", " The category was hard.", " She bought a catalog."]) {
      assert.deepEqual(reactionFor(s, text), { thumbs: "down", hint: "The story should have animals in it, like a cat, a dog or a bird." }, text);
      assert.equal(await score("p", text), 0, text);
    }
  });
});

describe("eval rules and scorers", () => {
  it("evaluates text rules", () => {
    assert.equal(matchRule({ regex: "\\bcats?\\b" }, "The Cat sat."), true, "regex is case-insensitive by default");
    assert.equal(matchRule({ regex: "\\bcats?\\b", flags: "" }, "The Cat sat."), false);
    assert.equal(matchRule({ regex: "\\bcats?\\b" }, "concatenate"), false);
    assert.equal(matchRule({ contains: "DOG" }, "a dog"), true);
    assert.equal(matchRule({ minLength: 3 }, "  ab  "), false);
    assert.equal(matchRule({ maxLength: 2 }, " ab "), true);
    assert.equal(matchRule({ not: { contains: "sorry" } }, "Sorry!"), false);
    assert.equal(matchRule({ all: [{ contains: "a" }, { contains: "b" }] }, "ab"), true);
    assert.equal(matchRule({ all: [{ contains: "a" }, { contains: "c" }] }, "ab"), false);
    assert.equal(matchRule({ any: [{ contains: "x" }, { contains: "b" }] }, "ab"), true);
  });

  it("picks the first matching reaction, else otherwise", () => {
    const s = parseScenario({
      ...minimal(),
      reactions: {
        rules: [
          { when: { contains: "cat" }, react: { thumbs: "up" } },
          { when: { contains: "c" }, react: { next: "no" } },
        ],
        otherwise: { thumbs: "down" },
      },
    });
    assert.deepEqual(reactionFor(s, "a cat"), { thumbs: "up" });
    assert.deepEqual(reactionFor(s, "a cow"), { next: "no" });
    assert.deepEqual(reactionFor(s, "a dog"), { thumbs: "down" });
    const none = parseScenario({ ...minimal(), reactions: { rules: [{ when: { contains: "cat" }, react: { thumbs: "up" } }] } });
    assert.equal(reactionFor(none, "a dog"), null);
  });

  it("scores the weighted share of checks passed", async () => {
    const checks = [
      { rule: { contains: "cat" }, weight: 3 },
      { rule: { not: { contains: "sorry" } }, weight: 1 },
    ];
    assert.equal(ruleScore(checks, "a cat"), 1);
    assert.equal(ruleScore(checks, "sorry, a cat"), 0.75);
    assert.equal(ruleScore(checks, "sorry"), 0);
    const s = parseScenario(minimal());
    assert.equal(await makeScorer(s)("p", "the cat"), 1);
    assert.equal(await makeScorer(s)("p", "the dog"), 0);
  });

  it("reads a judge's score and calls an OpenAI-compatible judge", async () => {
    assert.equal(parseJudgeScore("I think 3 ... \\boxed{7} then 9"), 7);
    assert.equal(parseJudgeScore("score: 8 out of 10"), 10);
    assert.equal(parseJudgeScore("no number"), null);
    const s = parseScenario({ ...minimal(), scorer: { kind: "judge", url: "http://judge.local/v1/", prompt: "Q {prompt} A {answer}", scale: 10 } });
    const seen: string[] = [];
    const fake = (async (url: string, init: RequestInit) => {
      seen.push(url, JSON.parse(init.body as string).messages[0].content);
      return new Response(JSON.stringify({ choices: [{ message: { content: "\\boxed{8}" } }] }), { status: 200 });
    }) as unknown as typeof fetch;
    assert.equal(await makeScorer(s, fake)("once", "a cat"), 0.8);
    assert.deepEqual(seen, ["http://judge.local/v1/chat/completions", "Q once A a cat"]);
    const failing = (async () => new Response("down", { status: 503 })) as unknown as typeof fetch;
    await assert.rejects(makeScorer(s, failing)("p", "a"), /judge http:\/\/judge\.local\/v1: HTTP 503: down/);
  });
});

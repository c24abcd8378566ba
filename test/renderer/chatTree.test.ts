// The chat's tree as shown (renderer/src/pages/chat/tree.ts, displayTree): the active path, the
// versions of a question (edited) and of an answer (regenerated), a stopped answer, tool steps.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { TurnView } from "../../electron/core/api/sessions.js";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";
import { displayTree, keepLive } from "../../renderer/src/pages/chat/displayMessage.js";

let n = 0;
function turn(id: string, parent: string | null, messages: ChatMessage[], text: string, extra: Partial<TurnView> = {}): TurnView {
  return {
    turnId: id,
    sessionId: "s",
    index: n++,
    type: "main",
    time: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString(),
    adapter: "base",
    model: "tiny",
    messages,
    text,
    feedback: null,
    judge: null,
    reward: null,
    finishReason: "stop",
    parentTurnId: parent,
    ...extra,
  };
}
const u = (content: string): ChatMessage => ({ role: "user", content });
const a = (content: string): ChatMessage => ({ role: "assistant", content });

test("regenerated answers are versions of one answer; the question shows once; a stopped one is marked", () => {
  const turns = [turn("t1", null, [u("Hi")], "one"), turn("t2", null, [u("Hi")], "two", { stopped: true }), turn("t3", null, [u("Hi")], "three")];
  const shown = displayTree({ turns, activePath: ["t3"] });
  assert.deepEqual(
    shown.map((m) => [m.role, m.content]),
    [
      ["user", "Hi"],
      ["assistant", "three"],
    ],
  );
  assert.equal(shown[0].branch, null, "one question, no versions");
  assert.deepEqual(shown[1].branch, { index: 2, turnIds: ["t1", "t2", "t3"] });
  const stopped = displayTree({ turns, activePath: ["t2"] });
  assert.equal(stopped[1].stopped, true);
  assert.equal(stopped[1].branch?.index, 1);
});

test("an edited question is a version of the question, each shown through its latest answer", () => {
  const turns = [
    turn("t1", null, [u("first")], "A1"),
    turn("t2", "t1", [u("first"), a("A1"), u("second")], "A2"),
    turn("t3", null, [u("first, edited")], "B1"),
    turn("t1b", null, [u("first")], "A1 again"),
  ];
  const old = displayTree({ turns, activePath: ["t1", "t2"] });
  assert.deepEqual(
    old.map((m) => m.content),
    ["first", "A1", "second", "A2"],
  );
  assert.deepEqual(old[0].branch, { index: 0, turnIds: ["t1", "t3"] }, "the edited version after the original");
  assert.deepEqual(old[0].deleteIds, ["t1", "t1b"], "deleting the question deletes its answers");
  assert.deepEqual(old[1].branch, { index: 0, turnIds: ["t1", "t1b"] });
  const edited = displayTree({ turns, activePath: ["t3"] });
  assert.deepEqual(edited[0].branch, { index: 1, turnIds: ["t1b", "t3"] }, "switching back shows the latest answer to the first version");
});

test("an answer that used tools is one message, its versions those of its first turn; a core without the tree shows every turn", () => {
  const call = { id: "c1", type: "function" as const, function: { name: "fs__read", arguments: "{}" } };
  const turns = [
    turn("t1", null, [u("read it")], ""),
    turn("t2", "t1", [u("read it"), { role: "assistant", content: null, tool_calls: [call] }, { role: "tool", tool_call_id: "c1", content: "data" }], "done"),
  ];
  const shown = displayTree({ turns, activePath: ["t1", "t2"] });
  assert.equal(shown.length, 2);
  assert.equal(shown[1].content, "done");
  assert.equal(shown[1].turnId, "t2", "feedback goes to the last turn");
  assert.equal(shown[1].rootTurnId, "t1", "versions and deletes go by the first");
  assert.equal(shown[1].steps?.[0].calls[0].result, "data");
  assert.equal(displayTree({ turns }).length, 2, "no activePath: every main turn in order");
});

test("a turn that continues a cut answer (Continue) joins it: one answer, no versions of its own", () => {
  const turns = [turn("t1", null, [u("Count")], "one two"), turn("t2", "t1", [u("Count"), a("one two")], " three"), turn("t1b", null, [u("Count")], "uno")];
  const shown = displayTree({ turns, activePath: ["t1", "t2"] });
  assert.deepEqual(
    shown.map((m) => [m.role, m.content]),
    [
      ["user", "Count"],
      ["assistant", "one two three"],
    ],
  );
  assert.equal(shown[1].turnId, "t2");
  assert.deepEqual(shown[1].branch, { index: 0, turnIds: ["t1", "t1b"] }, "the versions are the first turn's");
});

test("an answer cut by the token limit offers Continue in a reopened chat; a stopped one does not", () => {
  const turns = [
    turn("t1", null, [u("Write a lot")], "a long answer that", { finishReason: "length" }),
    turn("t2", null, [u("Write a lot")], "stopped here", { finishReason: "length", stopped: true }),
    turn("t3", null, [u("Write a lot")], "done.", { finishReason: "stop" }),
  ];
  assert.equal(displayTree({ turns, activePath: ["t1"] })[1].cut, true);
  assert.equal(displayTree({ turns, activePath: ["t2"] })[1].cut, false);
  assert.equal(displayTree({ turns, activePath: ["t3"] })[1].cut, false);
});

test("the recorded chat shown after an answer keeps what only the live answer knew: tool cards as they ended, stopped", () => {
  const turns = [turn("t1", null, [u("Look")], "", { finishReason: "tool_calls" })];
  const recorded = displayTree({ turns, activePath: ["t1"] });
  assert.equal(recorded[1].steps, undefined, "a turn records the calls it made, not what the user decided");
  const call = {
    id: "c1",
    name: "fs__list",
    server: "fs",
    tool: "list",
    arguments: "{}",
    status: "stopped",
    approval: null,
    result: null,
    truncated: false,
    ms: null,
  };
  const live = [recorded[0], { ...recorded[1], key: "live", steps: [{ text: "", calls: [call] }], stopped: true }] as typeof recorded;
  const shown = keepLive(recorded, live);
  assert.deepEqual(shown[1].steps, live[1].steps);
  assert.equal(shown[1].stopped, true);
  assert.equal(shown[1].key, recorded[1].key, "the recorded message, with the live parts");
  // Another turn's live state is not taken.
  assert.equal(keepLive(recorded, [{ ...live[1], turnId: "other" }])[1].stopped, false);
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { attachmentBlock } from "../../electron/core/api/attachments.js";
import type { SessionExport, TurnView } from "../../electron/core/api/sessions.js";
import { exportFileName, sessionMarkdown } from "../../electron/core/store/sessionExport.js";

const turn = (t: Partial<TurnView> & Pick<TurnView, "turnId" | "messages" | "text">): TurnView => ({
  sessionId: "s1",
  index: 0,
  type: "main",
  time: "2026-11-26T10:00:00.000Z",
  adapter: "base",
  model: "tiny",
  feedback: null,
  judge: null,
  reward: null,
  finishReason: "stop",
  parentTurnId: null,
  ...t,
});

describe("a chat as Markdown", () => {
  const file = { id: "att1", name: "notes.md", size: 2048, mediaType: "text/markdown", chars: 11, truncated: false, keptChars: 11 };
  const q1 = { role: "user" as const, content: `Summarise this\n\n${attachmentBlock(file, "hello notes")}` };
  const call = { id: "c1", type: "function" as const, function: { name: "search__web", arguments: '{"q":"otters"}' } };
  const a = turn({ turnId: "a", messages: [{ role: "system", content: "Be brief." }, q1], text: "", attachments: [file] });
  Object.assign(a, { toolCalls: [{ id: "c1", name: "search__web", arguments: '{"q":"otters"}' }] });
  const b = turn({
    turnId: "b",
    parentTurnId: "a",
    adapter: "3",
    stopped: true,
    messages: [
      { role: "system", content: "Be brief." },
      q1,
      { role: "assistant", content: "", tool_calls: [call] },
      { role: "tool", tool_call_id: "c1", content: "Otters sleep in water." },
    ],
    text: "They sleep float",
  });
  const other = turn({ turnId: "x", messages: [{ role: "user", content: "Another question" }], text: "no" });
  const exp: SessionExport = {
    format: "clawrl.session",
    version: 1,
    exportedAt: "2026-11-26T12:00:00.000Z",
    session: {
      id: "s1",
      title: "Otters & notes",
      createdAt: "",
      lastActivityAt: "",
      turnCount: 3,
      mainTurnCount: 3,
      closed: false,
      closedReason: null,
      source: "ui",
    },
    activePath: ["a", "b"],
    turns: [a, b, other],
  };

  it("names the title, each message of the branch shown, the attached files by name and size, tool calls and each answer's adapter", () => {
    const md = sessionMarkdown(exp);
    assert.match(md, /^# Otters & notes\n/);
    assert.match(md, /### User\n\nSummarise this\n\n- Attached: \*\*notes\.md\*\* \(2\.0 KB\)/);
    assert.ok(!md.includes("hello notes"), "the file's text is named, not pasted");
    assert.match(md, /- Tool call: `search__web` `\{"q":"otters"\}`/);
    assert.match(md, /### Tool result\n\n```\nOtters sleep in water\.\n```/);
    assert.match(md, /_adapter 3, model tiny, stopped by the user_\n\nThey sleep float/);
    assert.ok(!md.includes("Another question"), "another branch is left out");
    assert.ok(!md.includes("Be brief."), "no system prompt");
  });

  it("names the file after the title, else the session", () => {
    assert.equal(exportFileName(exp, "md"), "Otters-notes.md");
    assert.equal(exportFileName({ session: { ...exp.session, title: null } }, "json"), "chat-s1.json");
  });
});

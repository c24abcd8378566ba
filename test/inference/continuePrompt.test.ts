// An answer cut by the token limit is continued (issue 30): a chat request whose messages end
// with the assistant's text renders that answer open, so the model goes on where it stopped.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatMLChatWrapper, LlamaText } from "node-llama-cpp";
import { toChatHistory } from "../../electron/core/inference/chatPrompt.js";
import type { ChatMessage } from "../../electron/core/api/chatTypes.js";

const render = (messages: ChatMessage[]) =>
  LlamaText(new ChatMLChatWrapper().generateContextState({ chatHistory: toChatHistory(messages) }).contextText).toString();

test("a trailing assistant text is left open: the prompt ends with it, no end of turn, no new turn", () => {
  const text = render([
    { role: "user", content: "Count to ten" },
    { role: "assistant", content: "one two three" },
  ]);
  assert.ok(text.endsWith("<|im_start|>assistant\none two three"), JSON.stringify(text.slice(-80)));
  assert.equal(text.split("<|im_start|>assistant").length, 2, "one assistant turn");
});

test("a request that ends with the user's message (or a tool call) opens a new answer as before", () => {
  assert.ok(render([{ role: "user", content: "Hi" }]).endsWith("<|im_start|>assistant\n"));
  const afterAnswer = render([
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello" },
    { role: "user", content: "Again" },
  ]);
  assert.ok(afterAnswer.includes("Hello<|im_end|>") && afterAnswer.endsWith("<|im_start|>assistant\n"));
  const history = toChatHistory([
    { role: "user", content: "Hi" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
  ]);
  assert.deepEqual(history.at(-1), { type: "model", response: [] }, "a call without its result still gets a new answer");
});

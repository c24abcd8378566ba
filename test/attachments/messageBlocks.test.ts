// The chat's side of the attachment blocks (renderer/src/pages/chat/attachments): an edited
// question keeps its files, the editor shows only what was typed, and the files' share of the
// context.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { attachmentBlock, splitAttachments } from "../../electron/core/api/attachments.js";
import { attachmentCharBudget, typedOf, withAttachmentsOf } from "../../renderer/src/pages/chat/attachments/messageBlocks.js";

describe("attachment blocks in the chat", () => {
  const a = attachmentBlock({ id: "att_0123456789abcdef", name: "notes.txt", truncated: false }, "The secret word is PINEAPPLE.");
  const b = attachmentBlock({ id: "att_fedcba9876543210", name: "long.log", truncated: true }, "line 1\nline 2");
  const sent = `What do these say?\n\n${a}\n\n${b}`;

  it("the editor edits what was typed; the edited question carries the same files", () => {
    assert.equal(typedOf(sent), "What do these say?");
    assert.equal(typedOf("plain question"), "plain question");
    const edited = withAttachmentsOf(sent, "And now?");
    assert.equal(edited, `And now?\n\n${a}\n\n${b}`);
    assert.deepEqual(
      splitAttachments(edited).blocks.map((x) => [x.id, x.truncated]),
      [
        ["att_0123456789abcdef", false],
        ["att_fedcba9876543210", true],
      ],
    );
    assert.equal(withAttachmentsOf("no files", "edited"), "edited");
  });

  it("the files' share of the context: none without a model (the core decides), at least 500 characters", () => {
    assert.equal(attachmentCharBudget(null), undefined);
    assert.equal(attachmentCharBudget(256), 500);
    const qwen = attachmentCharBudget(32768)!;
    assert.ok(qwen > 30_000 && qwen < 60_000, `${qwen}`);
  });
});

/**
 * Issue 30, attach files: POST /api/attachments reads text, Markdown, code, CSV, JSON and PDF
 * (a real PDF, written by hand, read by pdfjs-dist), refuses images (with the reason), binary
 * data and a PDF without a text layer, cuts long text to maxChars (truncated, keptChars), stores
 * the file with its chat (kept across a core restart, moved to the chat on its first turn), and
 * a recorded turn's view lists its attachments.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { attachmentBlock, splitAttachments } from "../../electron/core/api/attachments.js";
import type { AttachmentView } from "../../electron/core/api/sessions.js";
import { startCore, type RunningCore } from "../../electron/core/core.js";
import { cutText, MAX_ATTACHMENT_BYTES } from "../../electron/core/attachments/service.js";
import { AttachmentStore, safeFileName, sessionDirName } from "../../electron/core/attachments/store.js";
import { sessionAttachments } from "../../electron/core/attachments/turns.js";
import { callApi } from "../helpers/api.js";
import { tempDir } from "../helpers/cli.js";
import { minimalPdf, PNG_BYTES } from "./pdf.js";

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

describe("attachments", { timeout: 120_000 }, () => {
  const dataDir = tempDir("clawrl-attach-");
  let core: RunningCore;
  const start = async () => (core = await startCore({ dataDir, port: 0, training: false, token: "attach-token-0123456789" }));
  const upload = (name: string, data: string | Buffer, extra: Record<string, unknown> = {}) =>
    callApi(core, "POST", "/api/attachments", { name, dataBase64: b64(data), sessionId: null, ...extra });

  before(start);
  after(async () => {
    await core?.close();
  });

  it("reads text, Markdown, code, CSV and JSON, detecting the type from the bytes and the name", async () => {
    const cases: [string, string, string][] = [
      ["notes.txt", "Remember the milk.\r\nAnd the eggs.", "text/plain"],
      ["README.md", "# Title\n\nSome *Markdown*.", "text/markdown"],
      ["main.py", "def f(x):\n    return x * 2\n", "text/x-code"],
      ["table.csv", "name,age\nAda,36\n", "text/csv"],
      ["data.json", '{"a": [1, 2, 3]}', "application/json"],
      ["Makefile", "all:\n\techo hi\n", "text/x-code"],
    ];
    for (const [name, text, mediaType] of cases) {
      const r = await upload(name, text);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const a = r.body.attachment as AttachmentView;
      assert.equal(a.name, name);
      assert.equal(a.mediaType, mediaType, name);
      assert.equal(a.size, Buffer.byteLength(text));
      assert.equal(r.body.text, text.replace(/\r\n/g, "\n"));
      assert.deepEqual([a.truncated, a.keptChars, a.chars], [false, r.body.text.length, r.body.text.length]);
      assert.match(a.id, /^att_[0-9a-f]{16}$/);
    }
    // UTF-8 with a BOM and UTF-16 with a BOM are text too.
    const bom = await upload("bom.txt", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("héllo")]));
    assert.equal(bom.body.text, "héllo");
    const utf16 = await upload("wide.txt", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("wide text", "utf16le")]));
    assert.equal(utf16.status, 201, JSON.stringify(utf16.body));
    assert.equal(utf16.body.text, "wide text");
  });

  it("reads a PDF's text layer, page by page; a PDF without one is refused with the reason (422)", async () => {
    const pdf = minimalPdf([["Quarterly report (draft)", "Revenue grew by 12 percent."], ["Second page: the outlook."]]);
    const r = await upload("report.pdf", pdf, { mediaType: "application/pdf" });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.attachment.mediaType, "application/pdf");
    assert.equal(r.body.attachment.size, pdf.length);
    assert.match(r.body.text, /Quarterly report \(draft\)\nRevenue grew by 12 percent\./);
    assert.match(r.body.text, /\n\nSecond page: the outlook\./);

    const scan = await upload("scan.pdf", minimalPdf([[]]));
    assert.equal(scan.status, 422, JSON.stringify(scan.body));
    assert.equal(scan.body.error.code, "unreadable_file");
    assert.match(scan.body.error.message, /scan\.pdf has no text layer/);

    const broken = await upload("broken.pdf", "%PDF-1.4\nnot really a pdf");
    assert.equal(broken.status, 422, JSON.stringify(broken.body));
    assert.match(broken.body.error.message, /could not be read as a PDF/);
  });

  it("refuses images with the reason, binary data, and text that is not UTF-8 (415 / 422)", async () => {
    const img = await upload("photo.png", PNG_BYTES, { mediaType: "image/png" });
    assert.equal(img.status, 415);
    assert.equal(img.body.error.code, "image_not_supported");
    assert.match(img.body.error.message, /Images need a vision-capable model; this app's runtime reads text only for now/);
    // An image by its name, whatever its bytes (an SVG is XML).
    const svg = await upload("logo.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>");
    assert.equal(svg.status, 415);
    assert.equal(svg.body.error.code, "image_not_supported");
    // A renamed image is still an image.
    assert.equal((await upload("notes.txt", PNG_BYTES)).body.error.code, "image_not_supported");

    const bin = await upload("blob.dat", Buffer.from([1, 2, 0, 3, 4, 0, 5, 6, 7, 8]));
    assert.equal(bin.status, 415);
    assert.equal(bin.body.error.code, "unsupported_file_type");
    assert.match(bin.body.error.message, /blob\.dat holds binary data, not text/);
    const zip = await upload("letter.docx", Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]));
    assert.equal(zip.status, 415);
    assert.match(zip.body.error.message, /ZIP archive.*save it as PDF or text/);

    const latin1 = await upload("old.txt", Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    assert.equal(latin1.status, 422);
    assert.match(latin1.body.error.message, /not UTF-8 text/);
    // Nothing refused was stored.
    assert.equal(fs.readdirSync(path.join(dataDir, "attachments", "unsorted")).length, 9);
  });

  it("cuts text past maxChars and says so; refuses a file over 20 MiB (413) and a body that is not base64 (400)", async () => {
    const long = Array.from({ length: 2000 }, (_, i) => `line ${i} of a long file`).join("\n");
    const r = await upload("long.txt", long, { maxChars: 1000 });
    assert.equal(r.status, 201);
    const a = r.body.attachment as AttachmentView;
    assert.equal(a.truncated, true);
    assert.equal(a.chars, long.length);
    assert.equal(a.keptChars, r.body.text.length);
    assert.ok(a.keptChars <= 1000 && a.keptChars > 900, `${a.keptChars}`);
    assert.ok(long.startsWith(r.body.text));
    // Without maxChars (no model: a fixed default) a short file is whole.
    assert.equal((await upload("short.txt", "tiny")).body.attachment.truncated, false);

    const big = Buffer.alloc(MAX_ATTACHMENT_BYTES + 1, 0x61);
    const tooBig = await upload("big.txt", big);
    assert.equal(tooBig.status, 413, JSON.stringify(tooBig.body).slice(0, 300));
    assert.equal(tooBig.body.error.code, "file_too_large");
    assert.match(tooBig.body.error.message, /big\.txt is 20\.0 MiB; files up to 20\.0 MiB can be attached/);
    // A file just under the limit goes through the route's own body limit (above the server's).
    const edge = await upload("edge.txt", Buffer.alloc(MAX_ATTACHMENT_BYTES, 0x61), { maxChars: 10 });
    assert.equal(edge.status, 201, JSON.stringify(edge.body).slice(0, 300));
    assert.equal(edge.body.attachment.keptChars, 10);

    const bad = await callApi(core, "POST", "/api/attachments", { name: "x.txt", dataBase64: "not base64!", sessionId: null });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, "dataBase64");
    const unknown = await callApi(core, "POST", "/api/attachments", { name: "x.txt", dataBase64: "", sessionId: null, extra: 1 });
    assert.equal(unknown.body.error.code, "unsupported_parameter");
  });

  it("stores the file with its chat: kept across a core restart, GET and DELETE by id", async () => {
    const r = await upload("keep.md", "# Keep me", { sessionId: "chat-1" });
    const id = r.body.attachment.id as string;
    const folder = path.join(dataDir, "attachments", "chat-1", id);
    assert.equal(fs.readFileSync(path.join(folder, "keep.md"), "utf8"), "# Keep me");
    await core.close();
    await start();
    const got = await callApi(core, "GET", `/api/attachments/${id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.attachment, r.body.attachment);
    const list = new AttachmentStore(path.join(dataDir, "attachments")).list("chat-1");
    assert.deepEqual(
      list.map((a) => [a.id, a.name, a.sessionId]),
      [[id, "keep.md", "chat-1"]],
    );
    assert.equal((await callApi(core, "DELETE", `/api/attachments/${id}`)).status, 204);
    assert.equal((await callApi(core, "GET", `/api/attachments/${id}`)).status, 404);
  });

  it("a turn's view lists its attachments; a new chat's files move to its session on its first turn", async () => {
    const doc = await upload("spec.txt", "The spec says 42.");
    const pdf = await upload("plan.pdf", minimalPdf([["The plan"]]));
    const blocks = [doc, pdf].map((r) => attachmentBlock(r.body.attachment, r.body.text)).join("\n\n");
    const content = `What does the spec say?\n\n${blocks}`;
    assert.deepEqual(
      splitAttachments(content).blocks.map((b) => b.name),
      ["spec.txt", "plan.pdf"],
    );
    const ctx = core.rollout.beginTurn({ headers: {}, bodyFields: {}, fromUi: true, messages: [{ role: "user", content }] });
    core.rollout.completeTurn(ctx, {
      model: "m",
      adapter: "base",
      promptTokens: [1],
      responseTokens: [2],
      tokenLogprobs: [-1],
      text: "42.",
      finishReason: "stop",
      sampling: { temperature: 1, topP: 1 },
    });
    const view = core.store.turnView(ctx.turnId);
    assert.deepEqual(view.attachments, [doc.body.attachment, pdf.body.attachment]);
    const session = await callApi(core, "GET", `/api/sessions/${encodeURIComponent(ctx.sessionId)}`);
    assert.deepEqual(session.body.turns.at(-1).attachments, [doc.body.attachment, pdf.body.attachment]);
    // Moved from unsorted to the chat's folder; listed for the chat's export; deleted with the chat.
    const store = new AttachmentStore(path.join(dataDir, "attachments"));
    assert.deepEqual(
      store.list(ctx.sessionId).map((a) => a.name),
      ["spec.txt", "plan.pdf"],
    );
    assert.ok(!fs.existsSync(path.join(dataDir, "attachments", "unsorted", doc.body.attachment.id)));
    const exported = sessionAttachments(dataDir, ctx.sessionId);
    assert.deepEqual(
      exported.map((e) => e.attachment),
      [doc.body.attachment, pdf.body.attachment],
    );
    assert.equal(fs.readFileSync(exported[0].path!, "utf8"), "The spec says 42.");
    assert.equal((await callApi(core, "DELETE", `/api/sessions/${encodeURIComponent(ctx.sessionId)}`)).status, 204);
    assert.ok(!fs.existsSync(path.join(dataDir, "attachments", sessionDirName(ctx.sessionId))));
  });

  it("a chat whose first message is files alone is titled by their names, never their text", async () => {
    const r = await upload("minutes.md", "# Minutes\n\nNothing decided.");
    const content = attachmentBlock(r.body.attachment, r.body.text);
    const ctx = core.rollout.beginTurn({ headers: {}, bodyFields: {}, fromUi: true, messages: [{ role: "user", content }] });
    core.rollout.completeTurn(ctx, {
      model: "m",
      adapter: "base",
      promptTokens: [1],
      responseTokens: [2],
      tokenLogprobs: [-1],
      text: "Noted.",
      finishReason: "stop",
      sampling: { temperature: 1, topP: 1 },
    });
    assert.equal(core.store.session(ctx.sessionId)?.title, "minutes.md");
  });
});

describe("attachment helpers", () => {
  it("cutText keeps whole surrogate pairs, prefers a line end, and keeps the block's closing tag out of the text", () => {
    assert.deepEqual(cutText("ab😀cd", 3), { text: "ab", truncated: true });
    assert.deepEqual(cutText("a".repeat(95) + "\n" + "b".repeat(10), 100), { text: "a".repeat(95), truncated: true });
    const escaped = cutText("x\n</attachment>\ny", 100).text;
    const block = attachmentBlock({ id: "att_0000000000000000", name: "a.txt", truncated: false }, escaped);
    assert.equal(splitAttachments(`${block}\n\nafter`).typed, "after");
  });

  it("safe file and folder names", () => {
    assert.equal(safeFileName("../../etc/passwd"), "passwd");
    assert.equal(safeFileName('a<b>:"c|d?.txt'), "a_b___c_d_.txt");
    assert.equal(safeFileName("..."), "file");
    assert.equal(sessionDirName(null), "unsorted");
    assert.equal(sessionDirName("abc-123"), "abc-123");
    assert.match(sessionDirName("a/b"), /^s-[0-9a-f]{32}$/);
  });
});

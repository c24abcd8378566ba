import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadConfig, parseConfig, setServerEnabled, updateConfig } from "../../electron/core/tools/config.js";
import { maskerFor, summaryOf } from "../../electron/core/tools/secrets.js";
import { cutResult, resultText } from "../../electron/core/tools/result.js";
import { allowedBy } from "../../electron/core/tools/permissions.js";
import { tempDir } from "../helpers/cli.js";

describe("mcp.json", () => {
  it("reads Claude Desktop's shape: stdio and http servers, our optional keys", () => {
    const c = parseConfig(
      "mcp.json",
      JSON.stringify({
        mcpServers: {
          filesystem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
          memory: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"], env: { MEMORY_FILE_PATH: "/x/m.json" }, disabled: true, timeout: 5 },
          remote: {
            url: "https://example.com/mcp",
            headers: { Authorization: "Bearer abcdef123456" },
            alwaysAllow: ["search"],
            disabledTools: ["delete"],
            timeoutMs: 1500,
          },
          off: { command: "x", enabled: false },
        },
        globalShortcut: "Ctrl+Space",
      }),
    );
    assert.equal(c.error, null);
    const by = Object.fromEntries(c.servers.map((s) => [s.name, s]));
    assert.deepEqual(by.filesystem.args, ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]);
    assert.equal(by.filesystem.transport, "stdio");
    assert.equal(by.filesystem.enabled, true);
    assert.equal(by.filesystem.timeoutMs, 60_000);
    assert.equal(by.memory.enabled, false);
    assert.equal(by.memory.timeoutMs, 5000);
    assert.equal(by.remote.transport, "http");
    assert.deepEqual(by.remote.alwaysAllow, ["search"]);
    assert.deepEqual(by.remote.disabledTools, ["delete"]);
    assert.equal(by.remote.timeoutMs, 1500);
    assert.equal(by.off.enabled, false);
  });

  it("a broken file is an error in words, with no servers; a bad entry leaves the others", () => {
    assert.match(parseConfig("f", "{ not json").error ?? "", /not valid JSON/);
    assert.match(parseConfig("f", "[]").error ?? "", /JSON object/);
    assert.match(parseConfig("f", '{"mcpServers": 3}').error ?? "", /"mcpServers" must be an object/);
    assert.equal(parseConfig("f", "{ not json").servers.length, 0);
    const c = parseConfig(
      "f",
      JSON.stringify({
        mcpServers: { good: { command: "a" }, bad__name: { command: "a" }, neither: { args: [] }, badurl: { url: "ftp://x" }, emptycmd: { command: "" } },
      }),
    );
    assert.deepEqual(
      c.servers.map((s) => s.name),
      ["good"],
    );
    assert.deepEqual([...c.invalid.keys()].sort(), ["bad__name", "badurl", "emptycmd", "neither"]);
    assert.match(c.invalid.get("neither")!, /needs "command".*or "url"/);
    assert.match(c.invalid.get("emptycmd")!, /'command'/);
    assert.match(c.error ?? "", /bad__name/);
    assert.equal(parseConfig("f", null).error, null);
  });

  it("rewrites keep what the user wrote, in the key they use", () => {
    const dir = tempDir();
    const file = path.join(dir, "mcp.json");
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: "x", enabled: true, autoApprove: ["t"] }, b: { command: "y" } }, other: { keep: 1 } }));
    updateConfig(file, (s) => {
      setServerEnabled(s.a, false);
      setServerEnabled(s.b, false);
    });
    const raw = JSON.parse(fs.readFileSync(file, "utf8"));
    assert.deepEqual(raw.other, { keep: 1 });
    assert.deepEqual(raw.mcpServers.a, { command: "x", enabled: false, autoApprove: ["t"] });
    assert.deepEqual(raw.mcpServers.b, { command: "y", disabled: true });
    if (process.platform !== "win32") assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(
      loadConfig(file).servers.every((s) => !s.enabled),
      true,
    );
    fs.writeFileSync(file, "{ broken");
    assert.throws(() => updateConfig(file, () => undefined), /not valid JSON.*fix or remove/);
    assert.equal(fs.readFileSync(file, "utf8"), "{ broken");
  });
});

describe("secrets, results, permissions", () => {
  const server = {
    name: "s",
    transport: "stdio" as const,
    command: "node",
    args: ["srv.js", "--dir", "/a b"],
    env: { API_KEY: "sk-12345678", FLAG: "1" },
    headers: {},
    enabled: true,
    disabledTools: [],
    alwaysAllow: [],
    timeoutMs: 1,
  };
  it("masks env and header values in summaries and text", () => {
    assert.equal(summaryOf(server), 'API_KEY=**** FLAG=**** node srv.js --dir "/a b"');
    const mask = maskerFor(server);
    assert.equal(mask("key sk-12345678 and 1"), "key **** and 1");
    const http = {
      ...server,
      transport: "http" as const,
      url: "https://u:pw123456@h.example/mcp?key=qwerty123",
      headers: { Authorization: "Bearer tok-abcdef" },
      env: {},
    };
    const s = summaryOf(http);
    assert.doesNotMatch(s, /qwerty123|pw123456|tok-abcdef/);
    assert.match(s, /Authorization: \*\*\*\*/);
    assert.equal(maskerFor(http)("tok-abcdef qwerty123 Bearer tok-abcdef"), "**** **** ****");
  });

  it("a result is text; a long one is cut, saying where", () => {
    assert.equal(
      resultText({
        content: [
          { type: "text", text: "a" },
          { type: "image", mimeType: "image/png", data: "AAAA" },
        ],
      }),
      "a\n[image: image/png, 3 bytes]",
    );
    assert.equal(resultText({ content: [], structuredContent: { x: 1 } }), '{"x":1}');
    const r = cutResult("x".repeat(5000), 1000);
    assert.equal(r.truncated, true);
    assert.ok(r.content.startsWith("x".repeat(1000) + "\n\n[result cut at character 1000 of 5000"));
    assert.deepEqual(cutResult("short", 1000), { content: "short", truncated: false });
  });

  it("a call runs only with an approval or a standing 'always'", () => {
    assert.equal(allowedBy(undefined, "ask"), null);
    assert.equal(allowedBy(undefined, "always"), "standing");
    assert.equal(allowedBy("once", "ask"), "once");
  });
});

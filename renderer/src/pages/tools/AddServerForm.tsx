import { useId, useState } from "react";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { addServer, type ServerEntry } from "../../api/tools.js";
import { ErrorNote } from "../../components/Notices.js";
import { parseArgs, parsePairs, parsePastedServers, SERVER_NAME, serverNameRule } from "./serverEntry.js";

type Mode = "paste" | "program" | "web";

const modes: { id: Mode; label: string }[] = [
  { id: "paste", label: "Paste from another app" },
  { id: "program", label: "A program on this computer" },
  { id: "web", label: "A server on the web" },
];

const pasteExample = `{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/folder"]
    }
  }
}`;

/**
 * Adds servers to mcp.json: pasted as Claude Desktop (and Cursor, LM Studio) write them, or
 * typed in as a program to start (command, arguments, environment) or a web address (URL, headers).
 */
export function AddServerForm({ onAdded }: { onAdded(): void }) {
  const { client } = useCore();
  const id = useId();
  const [mode, setMode] = useState<Mode>("paste");
  const [name, setName] = useState("");
  const [pasted, setPasted] = useState("");
  const [command, setCommand] = useState("");
  const [args, setArgs] = useState("");
  const [env, setEnv] = useState("");
  const [url, setUrl] = useState("");
  const [headers, setHeaders] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [added, setAdded] = useState<string | null>(null);

  /** What the form holds, as servers to add, or what is wrong with it. */
  const collect = (): { name: string; entry: ServerEntry }[] | string => {
    if (mode === "paste") {
      const r = parsePastedServers(pasted, name);
      return r.ok ? r.servers : r.error;
    }
    const n = name.trim();
    if (!SERVER_NAME.test(n)) return n ? `"${n}" cannot be a server's name. ${serverNameRule}` : "Give the server a name.";
    if (mode === "program") {
      if (!command.trim()) return "Type the command that starts the server.";
      const e = parsePairs(env, "=");
      if (!e.ok) return e.error;
      const a = parseArgs(args);
      return [{ name: n, entry: { command: command.trim(), ...(a.length ? { args: a } : {}), ...(Object.keys(e.value).length ? { env: e.value } : {}) } }];
    }
    if (!/^https?:\/\/\S+$/i.test(url.trim())) return "Type the server's address, starting with http:// or https://.";
    const h = parsePairs(headers, ":");
    if (!h.ok) return h.error;
    return [{ name: n, entry: { url: url.trim(), ...(Object.keys(h.value).length ? { headers: h.value } : {}) } }];
  };

  const submit = async () => {
    const servers = collect();
    if (typeof servers === "string") return setError(servers);
    setSaving(true);
    setError(null);
    setAdded(null);
    const done: string[] = [];
    try {
      for (const s of servers) {
        await addServer(client, s.name, s.entry);
        done.push(s.name);
      }
      setAdded(done.join(", "));
      setName("");
      setPasted("");
      setCommand("");
      setArgs("");
      setEnv("");
      setUrl("");
      setHeaders("");
    } catch (e) {
      const failed = servers[done.length]?.name ?? "";
      setError(`${done.length ? `Added ${done.join(", ")}; ` : ""}could not add "${failed}": ${messageOf(e)}`);
    } finally {
      setSaving(false);
      if (done.length) onAdded();
    }
  };

  return (
    <form
      className="tools-add settings"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <fieldset>
        <legend>Add a server</legend>
        <div className="tools-add-modes" role="radiogroup" aria-label="How to add it">
          {modes.map((m) => (
            <label key={m.id} className="check">
              <input type="radio" name={`${id}-mode`} value={m.id} checked={mode === m.id} onChange={() => setMode(m.id)} /> {m.label}
            </label>
          ))}
        </div>
        <label htmlFor={`${id}-name`}>
          Name{mode === "paste" && " (only when the pasted entry has none)"}
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. files" autoComplete="off" spellCheck={false} />
        </label>
        {mode === "paste" && (
          <label htmlFor={`${id}-json`} className="tools-add-wide">
            The server's entry, as Claude Desktop, Cursor or LM Studio keep it
            <textarea id={`${id}-json`} rows={8} value={pasted} onChange={(e) => setPasted(e.target.value)} placeholder={pasteExample} spellCheck={false} />
          </label>
        )}
        {mode === "program" && (
          <>
            <label htmlFor={`${id}-cmd`}>
              Command
              <input id={`${id}-cmd`} value={command} onChange={(e) => setCommand(e.target.value)} placeholder="e.g. npx" spellCheck={false} />
            </label>
            <label htmlFor={`${id}-args`}>
              Arguments, one per line
              <textarea id={`${id}-args`} rows={3} value={args} onChange={(e) => setArgs(e.target.value)} placeholder={"-y\n@modelcontextprotocol/server-memory"} spellCheck={false} />
            </label>
            <label htmlFor={`${id}-env`}>
              Environment, NAME=value per line (kept private: never shown again)
              <textarea id={`${id}-env`} rows={3} value={env} onChange={(e) => setEnv(e.target.value)} placeholder="API_KEY=…" spellCheck={false} />
            </label>
          </>
        )}
        {mode === "web" && (
          <>
            <label htmlFor={`${id}-url`} className="tools-add-wide">
              Address (URL)
              <input id={`${id}-url`} type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/mcp" spellCheck={false} />
            </label>
            <label htmlFor={`${id}-headers`} className="tools-add-wide">
              Headers, Name: value per line (kept private: never shown again)
              <textarea id={`${id}-headers`} rows={3} value={headers} onChange={(e) => setHeaders(e.target.value)} placeholder="Authorization: Bearer …" spellCheck={false} />
            </label>
          </>
        )}
        <div className="actions tools-add-wide">
          <button type="submit" className="primary" disabled={saving}>
            {saving ? "Adding…" : "Add server"}
          </button>
          {added && (
            <span className="small muted" role="status">
              Added {added}. It starts when it is first needed.
            </span>
          )}
        </div>
        {error && (
          <div className="tools-add-wide">
            <ErrorNote error={error} />
          </div>
        )}
      </fieldset>
    </form>
  );
}

import { useId } from "react";
import { ErrorNote } from "../../components/Notices.js";
import { useAddServerForm, type Mode, type ServerFields } from "./useAddServerForm.js";

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
export function AddServerForm({ onAdded }: { onAdded: () => void }) {
  const id = useId();
  const { mode, setMode, fields, set, submit, error, saving, added } = useAddServerForm(onAdded);

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
          <input
            id={`${id}-name`}
            value={fields.name}
            onChange={(e) => set("name", e.target.value)}
            placeholder="e.g. files"
            autoComplete="off"
            spellCheck={false}
          />
        </label>
        {mode === "paste" && (
          <label htmlFor={`${id}-json`} className="tools-add-wide">
            The server's entry, as Claude Desktop, Cursor or LM Studio keep it
            <textarea
              id={`${id}-json`}
              rows={8}
              value={fields.pasted}
              onChange={(e) => set("pasted", e.target.value)}
              placeholder={pasteExample}
              spellCheck={false}
            />
          </label>
        )}
        <ModeFields mode={mode} id={id} fields={fields} set={set} />
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

/** The fields of a program to start (command, arguments, environment) or of a web server (address, headers). */
function ModeFields({ mode, id, fields, set }: { mode: Mode; id: string; fields: ServerFields; set: (k: keyof ServerFields, v: string) => void }) {
  return (
    <>
      {mode === "program" && (
        <>
          <label htmlFor={`${id}-cmd`}>
            Command
            <input id={`${id}-cmd`} value={fields.command} onChange={(e) => set("command", e.target.value)} placeholder="e.g. npx" spellCheck={false} />
          </label>
          <label htmlFor={`${id}-args`}>
            Arguments, one per line
            <textarea
              id={`${id}-args`}
              rows={3}
              value={fields.args}
              onChange={(e) => set("args", e.target.value)}
              placeholder={"-y\n@modelcontextprotocol/server-memory"}
              spellCheck={false}
            />
          </label>
          <label htmlFor={`${id}-env`}>
            Environment, NAME=value per line (kept private: never shown again)
            <textarea id={`${id}-env`} rows={3} value={fields.env} onChange={(e) => set("env", e.target.value)} placeholder="API_KEY=…" spellCheck={false} />
          </label>
        </>
      )}
      {mode === "web" && (
        <>
          <label htmlFor={`${id}-url`} className="tools-add-wide">
            Address (URL)
            <input
              id={`${id}-url`}
              type="url"
              value={fields.url}
              onChange={(e) => set("url", e.target.value)}
              placeholder="https://example.com/mcp"
              spellCheck={false}
            />
          </label>
          <label htmlFor={`${id}-headers`} className="tools-add-wide">
            Headers, Name: value per line (kept private: never shown again)
            <textarea
              id={`${id}-headers`}
              rows={3}
              value={fields.headers}
              onChange={(e) => set("headers", e.target.value)}
              placeholder="Authorization: Bearer …"
              spellCheck={false}
            />
          </label>
        </>
      )}
    </>
  );
}

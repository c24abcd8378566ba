import { useId, useState } from "react";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { patchTool, removeServer, setServerEnabled, type ToolServerView, type ToolView } from "../../api/tools.js";
import { TrashIcon } from "../../components/Icons.js";

const statusWords: Record<ToolServerView["status"], string> = {
  running: "Running",
  starting: "Starting…",
  stopped: "Stopped",
  failed: "Failed",
};
const statusClass: Record<ToolServerView["status"], string> = {
  running: "tag tag-ok",
  starting: "tag tag-warn",
  stopped: "tag",
  failed: "tag tag-bad",
};

/** One server: its status, how it is started, its tools with their switches and permissions, its log. */
export function ServerCard({ server, onChanged }: { server: ToolServerView; onChanged: () => void }) {
  const { client } = useCore();
  const headingId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const act = async (what: string, fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(`${what}: ${messageOf(e)}`);
    } finally {
      setBusy(false);
      onChanged();
    }
  };
  const remove = () => {
    if (!window.confirm(`Remove the server "${server.name}"? Its tools leave the chat, and its entry is deleted from mcp.json.`)) return;
    void act("Could not remove it", () => removeServer(client, server.name));
  };

  return (
    <section className={server.enabled ? "tool-server card" : "tool-server card tool-server-off"} aria-labelledby={headingId}>
      <header className="tool-server-head">
        <h2 id={headingId}>{server.name}</h2>
        <span className={statusClass[server.status]}>
          {server.status === "starting" && <span className="spinner" aria-hidden="true" />} {server.enabled ? statusWords[server.status] : "Turned off"}
        </span>
        {server.restarts > 0 && (
          <span className="tag" title="Times the server was started again after it stopped unexpectedly">
            {server.restarts === 1 ? "1 restart" : `${server.restarts} restarts`}
          </span>
        )}
        <span className="tool-server-actions">
          <label className="switch">
            <input
              type="checkbox"
              role="switch"
              checked={server.enabled}
              disabled={busy}
              onChange={(e) => void act("Could not change it", () => setServerEnabled(client, server.name, e.target.checked))}
            />
            <span aria-hidden="true">{server.enabled ? "On" : "Off"}</span>
            <span className="sr-only">Use the server {server.name}</span>
          </label>
          <button type="button" className="icon" aria-label={`Remove ${server.name}`} title="Remove this server" disabled={busy} onClick={remove}>
            <TrashIcon />
          </button>
        </span>
      </header>
      <div className="small muted tool-server-summary">
        {server.transport === "http" ? "Web address: " : "Program: "}
        <code>{server.summary || "—"}</code>
      </div>
      {server.error && server.status !== "running" && (
        <p className="note note-error tool-server-error" role="alert">
          {server.error}
        </p>
      )}
      {server.enabled && server.status === "stopped" && !server.error && <p className="small muted">Starts when a chat first needs it.</p>}
      {error && (
        <p className="note note-error" role="alert">
          {error}
        </p>
      )}
      {server.tools.length > 0 ? (
        <ul className="tool-list" aria-label={`Tools of ${server.name}`}>
          {server.tools.map((t) => (
            <ToolRow key={t.name} server={server.name} tool={t} disabled={busy || !server.enabled} onAct={act} />
          ))}
        </ul>
      ) : (
        server.status === "running" && <p className="small muted">This server offers no tools.</p>
      )}
      {server.stderrTail.length > 0 && (
        <details className="tool-server-log">
          <summary>What the server wrote (last {server.stderrTail.length} lines)</summary>
          <pre>{server.stderrTail.join("\n")}</pre>
        </details>
      )}
    </section>
  );
}

/** One tool: name, description, on/off, and whether each call asks first (an "always" can be revoked). */
function ToolRow({
  server,
  tool,
  disabled,
  onAct,
}: {
  server: string;
  tool: ToolView;
  disabled: boolean;
  onAct: (what: string, fn: () => Promise<unknown>) => Promise<void>;
}) {
  const { client } = useCore();
  return (
    <li className={tool.enabled ? "tool-row" : "tool-row tool-row-off"}>
      <div className="tool-row-text">
        <code className="tool-name">{tool.name}</code>
        {tool.description && (
          <div className="small muted tool-desc" title={tool.description}>
            {tool.description}
          </div>
        )}
      </div>
      <div className="tool-row-controls">
        <span
          className={tool.permission === "always" ? "tag tag-active" : "tag"}
          title={tool.permission === "always" ? "Runs without asking" : "Each call waits for your Allow or Deny in the chat"}
        >
          {tool.permission === "always" ? "Always allowed" : "Ask every time"}
        </span>
        {tool.permission === "always" && (
          <button
            type="button"
            className="link small"
            aria-label={`Revoke "always allow" for ${tool.name}`}
            disabled={disabled}
            onClick={() => void onAct("Could not revoke it", () => patchTool(client, server, tool.name, { permission: "ask" }))}
          >
            Revoke
          </button>
        )}
        <label className="switch">
          <input
            type="checkbox"
            role="switch"
            checked={tool.enabled}
            disabled={disabled}
            onChange={(e) => void onAct("Could not change it", () => patchTool(client, server, tool.name, { enabled: e.target.checked }))}
          />
          <span aria-hidden="true">{tool.enabled ? "On" : "Off"}</span>
          <span className="sr-only">Use {tool.name}</span>
        </label>
      </div>
    </li>
  );
}

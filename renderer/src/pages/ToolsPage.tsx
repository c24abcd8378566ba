import { useLive } from "../api/core.js";
import { loadTools } from "../api/tools.js";
import { LoadProblem } from "../components/Notices.js";
import { AddServerForm } from "./tools/AddServerForm.js";
import { ServerCard } from "./tools/ServerCard.js";
import "./tools/tools.css";

/**
 * The tools the assistant may use in the chat: the servers that provide them (from mcp.json,
 * the file Claude Desktop and others use), each tool's switch and permission, and adding or
 * removing a server.
 */
export function ToolsPage() {
  // Servers start, fail and restart by themselves: the `tools` event says when; polled too while the event stream is down.
  const tools = useLive(loadTools, ["tools"], [], 3000);
  const data = tools.data;
  return (
    <div className="page tools-page">
      <header className="page-head">
        <h1>Tools</h1>
      </header>
      <p className="muted tools-intro">
        Tools let the assistant act: read your files, keep a memory, look things up. They come from servers (small programs on this computer, or services on the
        web) that speak the Model Context Protocol, the same ones Claude Desktop, Cursor and LM Studio use. In the chat, every call waits for your Allow or Deny
        unless you allowed that tool for good.
      </p>
      {tools.error && <LoadProblem error={tools.error} what="Tools" onRetry={tools.reload} />}
      {data && (
        <div className="kv tools-config small">
          <span className="muted">Settings file</span>
          <code>{data.configPath}</code>
          <span />
        </div>
      )}
      {data?.configError && (
        <div className="note note-error note-block" role="alert">
          <strong>The settings file could not be read, so no tools are offered.</strong>
          <div className="small">{data.configError}</div>
        </div>
      )}
      {data && data.servers.length === 0 && !data.configError && (
        <p className="note note-muted">No servers yet. Add one below, or paste the entry you use in another app.</p>
      )}
      <div className="tool-servers">
        {data?.servers.map((s) => (
          <ServerCard key={s.name} server={s} onChanged={tools.reload} />
        ))}
      </div>
      <AddServerForm onAdded={tools.reload} />
    </div>
  );
}

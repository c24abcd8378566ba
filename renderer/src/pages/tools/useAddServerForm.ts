import { useState } from "react";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { addServer, type ServerEntry } from "../../api/tools.js";
import { parseArgs, parsePairs, parsePastedServers, SERVER_NAME, serverNameRule } from "./serverEntry.js";

/** How a server is added: pasted from another app's config, a program to start, or a web address. */
export type Mode = "paste" | "program" | "web";

/** What the Add a server form holds: each mode reads its own fields (and the name). */
export interface ServerFields {
  name: string;
  pasted: string;
  command: string;
  args: string;
  env: string;
  url: string;
  headers: string;
}

const empty: ServerFields = { name: "", pasted: "", command: "", args: "", env: "", url: "", headers: "" };

/** What the form holds, as servers to add, or what is wrong with it. */
function collect(mode: Mode, f: ServerFields): { name: string; entry: ServerEntry }[] | string {
  if (mode === "paste") {
    const r = parsePastedServers(f.pasted, f.name);
    return r.ok ? r.servers : r.error;
  }
  const n = f.name.trim();
  if (!SERVER_NAME.test(n)) return n ? `"${n}" cannot be a server's name. ${serverNameRule}` : "Give the server a name.";
  if (mode === "program") {
    if (!f.command.trim()) return "Type the command that starts the server.";
    const e = parsePairs(f.env, "=");
    if (!e.ok) return e.error;
    const a = parseArgs(f.args);
    return [{ name: n, entry: { command: f.command.trim(), ...(a.length ? { args: a } : {}), ...(Object.keys(e.value).length ? { env: e.value } : {}) } }];
  }
  if (!/^https?:\/\/\S+$/i.test(f.url.trim())) return "Type the server's address, starting with http:// or https://.";
  const h = parsePairs(f.headers, ":");
  if (!h.ok) return h.error;
  return [{ name: n, entry: { url: f.url.trim(), ...(Object.keys(h.value).length ? { headers: h.value } : {}) } }];
}

/** The Add a server form's state, and its submit: each server in turn to mcp.json, the fields cleared once all are added. */
export function useAddServerForm(onAdded: () => void) {
  const { client } = useCore();
  const [mode, setMode] = useState<Mode>("paste");
  const [fields, setFields] = useState<ServerFields>(empty);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [added, setAdded] = useState<string | null>(null);

  const set = (k: keyof ServerFields, v: string) => setFields((f) => ({ ...f, [k]: v }));

  const submit = async () => {
    const servers = collect(mode, fields);
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
      setFields(empty);
    } catch (e) {
      const failed = servers[done.length]?.name ?? "";
      setError(`${done.length ? `Added ${done.join(", ")}; ` : ""}could not add "${failed}": ${messageOf(e)}`);
    } finally {
      setSaving(false);
      if (done.length) onAdded();
    }
  };

  return { mode, setMode, fields, set, submit, error, saving, added };
}

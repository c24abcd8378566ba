import { useState } from "react";
import type { DownloadView, HubFileView, InstalledModelView, ModelFilesReply, ModelSearchReply } from "../../../../electron/core/api/models.js";
import { messageOf } from "../../api/client.js";
import { useCore } from "../../api/core.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtBytes } from "../../components/format.js";
import { ErrorNote } from "../../components/Notices.js";
import { TrainVerdict } from "../../components/Trainability.js";
import { DownloadButtons, DownloadProgress, downloadActive } from "./DownloadCell.js";
import type { ModelAction } from "./useModelActions.js";

/** "Search Hugging Face": GGUF repositories by words, a repository's files with their quantization, size and verdicts here; download one, then use it. */
export function HubSearch({
  downloads,
  installed,
  activePath,
  busy,
  onAct,
}: {
  downloads: (DownloadView | null)[];
  installed: InstalledModelView[];
  activePath: string | null;
  busy: string | null;
  onAct: ModelAction;
}) {
  const { client } = useCore();
  const [query, setQuery] = useState("");
  const [repos, setRepos] = useState<ModelSearchReply | null>(null);
  const [files, setFiles] = useState<ModelFilesReply | null>(null);
  const [loading, setLoading] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const search = async (q: string) => {
    setLoading("Searching…");
    setError(null);
    setFiles(null);
    try {
      setRepos(await client.getJson(`/api/models/search?q=${encodeURIComponent(q)}`));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setLoading(null);
    }
  };
  const open = async (repo: string) => {
    setLoading(`Reading ${repo}…`);
    setError(null);
    try {
      setFiles(await client.getJson(`/api/models/search/files?repo=${encodeURIComponent(repo)}`));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setLoading(null);
    }
  };

  return (
    <section aria-labelledby="hub-search-title">
      <h2 id="hub-search-title">Search Hugging Face</h2>
      <form
        className="inline-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          if (query.trim()) void search(query.trim());
        }}
      >
        <input
          aria-label="Search Hugging Face for GGUF models"
          placeholder="qwen3, llama 3.2, smollm…"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
        <button type="submit" disabled={!query.trim() || loading !== null}>
          Search
        </button>
      </form>
      {loading && (
        <p className="muted" role="status">
          <span className="spinner" aria-hidden="true" /> {loading}
        </p>
      )}
      {error && <ErrorNote error={error} />}
      {repos && repos.repos.length === 0 && <p className="muted">No GGUF models match “{repos.query}”.</p>}
      {repos && repos.repos.length > 0 && (
        <ul className="hub-repos" aria-label="Repositories found">
          {repos.repos.map((r) => (
            <li key={r.id}>
              <button
                type="button"
                className={files?.repo === r.id ? "hub-repo hub-repo-open" : "hub-repo"}
                aria-pressed={files?.repo === r.id}
                onClick={() => void open(r.id)}
              >
                <strong>{r.id}</strong>
                {r.downloads !== null && <span className="small muted"> · {r.downloads.toLocaleString()} downloads</span>}
              </button>
            </li>
          ))}
        </ul>
      )}
      {files && <HubFiles reply={files} downloads={downloads} installed={installed} activePath={activePath} busy={busy} onAct={onAct} />}
    </section>
  );
}

/** One repository's files: quantization, size, whether it serves and learns here, and its download or Use now. */
function HubFiles({
  reply,
  downloads,
  installed,
  activePath,
  busy,
  onAct,
}: {
  reply: ModelFilesReply;
  downloads: (DownloadView | null)[];
  installed: InstalledModelView[];
  activePath: string | null;
  busy: string | null;
  onAct: ModelAction;
}) {
  return (
    <>
      <h3>
        {reply.repo}
        {reply.architecture && <span className="small muted"> · {reply.architecture}</span>}
      </h3>
      {reply.headerNote && <p className="small muted">{reply.headerNote}</p>}
      {reply.files.length === 0 ? (
        <p className="muted">This repository has no GGUF files.</p>
      ) : (
        <DataTable columns={["Quantization", "Size", "On this computer", "Download"]} actions>
          {reply.files.map((f) => (
            <HubFileRow
              key={f.id}
              f={f}
              d={downloads.find((x) => x?.id === f.id) ?? null}
              model={installed.find((m) => m.id === f.id) ?? null}
              activePath={activePath}
              busy={busy}
              onAct={onAct}
            />
          ))}
        </DataTable>
      )}
    </>
  );
}

function HubFileRow({
  f,
  d,
  model,
  activePath,
  busy,
  onAct,
}: {
  f: HubFileView;
  d: DownloadView | null;
  model: InstalledModelView | null;
  activePath: string | null;
  busy: string | null;
  onAct: ModelAction;
}) {
  const label = f.quantization ?? f.file;
  const active = downloadActive(d);
  return (
    <tr>
      <td>
        <strong>{label}</strong>
        <div className="small muted hub-file-name">{f.parts > 1 ? `${f.file} (1 of ${f.parts} parts)` : f.file}</div>
      </td>
      <td className="nowrap">{fmtBytes(f.sizeBytes)}</td>
      <td>
        {f.refused ? (
          <div className="small muted">{f.refused}</div>
        ) : (
          <>
            <div className={`small train-verdict train-verdict-${f.serve.fits ? "ok" : "no"}`} title={f.serve.summary}>
              {f.serve.fits ? `Serves here (about ${fmtBytes(f.serve.needBytes)})` : `Too large to serve here: needs about ${fmtBytes(f.serve.needBytes)}`}
            </div>
            <TrainVerdict t={f.training} />
          </>
        )}
      </td>
      <td className="download-cell">{model && !active ? <span className="tag tag-ok">installed</span> : d ? <DownloadProgress d={d} name={label} /> : null}</td>
      <td className="nowrap row-actions">
        {f.refused ? null : model && activePath === model.path ? (
          <span className="tag tag-active">active</span>
        ) : model ? (
          <button type="button" className="primary" disabled={busy !== null} onClick={() => void onAct(`Use ${model.name}`, "/api/models/use", { id: f.id })}>
            Use now
          </button>
        ) : active && d ? (
          <DownloadButtons id={f.id} d={d} onAct={onAct} />
        ) : (
          <button type="button" disabled={busy !== null} onClick={() => void onAct(`Download ${label}`, "/api/models/pull", { id: f.id })}>
            {d?.state === "failed" ? "Retry" : "Download"}
          </button>
        )}
      </td>
    </tr>
  );
}

import { useId } from "react";
import type { Decision, ToolCallView } from "../chat/agentLoop.js";
import "./toolCallCard.css";

const statusWords: Record<ToolCallView["status"], string> = {
  waiting: "Waiting for you",
  running: "Running…",
  done: "Done",
  failed: "Failed",
  declined: "Declined",
  stopped: "Stopped",
};

const statusTag: Record<ToolCallView["status"], string> = {
  waiting: "tag tag-warn",
  running: "tag",
  done: "tag tag-ok",
  failed: "tag tag-bad",
  declined: "tag",
  stopped: "tag",
};

/** The model's JSON arguments, indented; text that is not JSON as it came. */
export function prettyArguments(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

function fmtMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * One tool call inside an answer: which tool, its arguments, where it is (waiting for the user,
 * running, done), its result (collapsed) and how long it took. While it waits, the user answers
 * with Allow once / Always allow this tool / Deny.
 */
export function ToolCallCard({ call, onDecide }: { call: ToolCallView; onDecide?: (d: Decision) => void }) {
  const id = useId();
  const asking = call.status === "waiting" && onDecide !== undefined;
  return (
    <section className={`tool-call tool-call-${call.status}`} aria-labelledby={`${id}-title`}>
      <header className="tool-call-head">
        <span className="tool-call-title" id={`${id}-title`}>
          <span className="muted small">Tool</span> <code>{call.tool}</code>
          {call.server && <span className="muted small"> on {call.server}</span>}
        </span>
        <span className={statusTag[call.status]} role="status">
          {call.status === "running" && <span className="spinner" aria-hidden="true" />} {statusWords[call.status]}
        </span>
        {call.approval === "standing" && (
          <span className="tag" title="You allowed this tool for good; the Tools page can revoke it">
            Always allowed
          </span>
        )}
        {call.ms !== null && <span className="small muted tool-call-time">{fmtMs(call.ms)}</span>}
      </header>
      <pre className="tool-call-args" aria-label="Arguments">
        {prettyArguments(call.arguments)}
      </pre>
      {asking && (
        <div className="tool-call-ask" role="group" aria-label={`Run ${call.tool}?`}>
          <span className="small">The assistant wants to run this tool.</span>
          <button type="button" className="primary" onClick={() => onDecide("once")}>
            Allow once
          </button>
          <button type="button" onClick={() => onDecide("always")} title="Run this tool from now on without asking (the Tools page can revoke it)">
            Always allow this tool
          </button>
          <button type="button" onClick={() => onDecide("deny")}>
            Deny
          </button>
        </div>
      )}
      {call.result !== null && call.status !== "declined" && (
        <details className="tool-call-result">
          <summary>
            {call.status === "failed" ? "Error" : "Result"}
            {call.truncated && <span className="small muted"> (cut to fit the conversation)</span>}
          </summary>
          <pre>{call.result}</pre>
        </details>
      )}
      {call.status === "declined" && <div className="small muted">You declined this call; the assistant was told.</div>}
    </section>
  );
}

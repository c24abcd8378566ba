import { Component, type ErrorInfo, type ReactNode } from "react";
import type { ApiError } from "../api/client.js";

export function ErrorNote({ error, onRetry }: { error: Error | string; onRetry?: () => void }) {
  return (
    <div className="note note-error" role="alert">
      <span>{typeof error === "string" ? error : error.message}</span>
      {onRetry && (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

export function NotAvailable({ what }: { what: string }) {
  return (
    <div className="note note-muted" role="status">
      <strong>{what}: not offered by the assistant's engine.</strong> It runs without learning.
    </div>
  );
}

/** Shows a readable message for a load error, or the "not offered" state on 404. */
export function LoadProblem({ error, what, onRetry }: { error: Error | ApiError; what: string; onRetry?: () => void }) {
  if ("notAvailable" in error && error.notAvailable) return <NotAvailable what={what} />;
  return <ErrorNote error={error} onRetry={onRetry} />;
}

/** Last line of defence: a render error shows a message and a way back, never a blank window. */
export class ErrorBoundary extends Component<{ children: ReactNode }, { error: Error | null }> {
  state = { error: null as Error | null };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  componentDidCatch(error: Error, info: ErrorInfo) {
    console.error("UI error", error, info.componentStack);
  }
  render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="page">
        <ErrorNote error={`Something went wrong on this page: ${this.state.error.message}`} onRetry={() => this.setState({ error: null })} />
      </div>
    );
  }
}

import { useEffect, useState } from "react";
import { useCore } from "../../api/core.js";
import type { SessionSearchHit, SessionSearchReply } from "../../../../electron/core/api/sessions.js";

/** Chats whose messages hold `query` (GET /api/search?q=), asked a moment after typing stops; null while none is asked. */
export function useMessageSearch(query: string): { hits: SessionSearchHit[] | null; error: boolean } {
  const { client } = useCore();
  const [result, setResult] = useState<{ q: string; hits: SessionSearchHit[] | null; error: boolean }>({ q: "", hits: null, error: false });
  const q = query.trim();
  useEffect(() => {
    if (!q) return;
    let live = true;
    const timer = window.setTimeout(() => {
      client
        .get<SessionSearchReply>(`/api/search?q=${encodeURIComponent(q)}`)
        .then((r) => live && setResult({ q, hits: r.hits, error: false }))
        .catch(() => live && setResult({ q, hits: null, error: true }));
    }, 250);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [client, q]);
  // A reply to an older query is not shown.
  return result.q === q && q ? { hits: result.hits, error: result.error } : { hits: null, error: false };
}

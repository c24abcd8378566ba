import { useEffect, useState } from "react";

interface Health {
  ok: boolean;
}

/** Placeholder shell: proves the UI is served and can reach the core. The real pages come with the UI issue. */
export function App() {
  const [health, setHealth] = useState<Health | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    fetch("/healthz")
      .then((r) => r.json() as Promise<Health>)
      .then(setHealth)
      .catch((e: unknown) => setError(String(e)));
  }, []);
  return (
    <main>
      <h1>ClawRL</h1>
      <p role="status">{error ? `Core unreachable: ${error}` : health?.ok ? "Core connected" : "Connecting…"}</p>
    </main>
  );
}

import { useEffect, useRef, useState } from "react";
import { CoreClient } from "./api/client.js";
import { forgetToken, rememberToken, resolveConfig } from "./api/config.js";
import { CoreProvider, useCore } from "./api/core.js";
import { ErrorBoundary } from "./components/Notices.js";
import { ConfirmDialog } from "./components/ConfirmDialog.js";
import { discardUnsavedChanges, hasUnsavedChanges } from "./components/unsavedChanges.js";
import { ChatIcon, CheckpointsIcon, ModelsIcon, MoonIcon, PreferencesIcon, SettingsIcon, SunIcon, ToolsIcon, TrainingIcon } from "./components/Icons.js";
import { ChatPage } from "./pages/ChatPage.js";
import { CheckpointsPage } from "./pages/CheckpointsPage.js";
import { PreferencesPage } from "./pages/PreferencesPage.js";
import { ModelsPage } from "./pages/ModelsPage.js";
import { SettingsPage } from "./pages/SettingsPage.js";
import { ToolsPage } from "./pages/ToolsPage.js";
import { TrainingPage, describeTraining } from "./pages/TrainingPage.js";
import { adapterLabel } from "./components/format.js";
import logoUrl from "./assets/logo.svg";

const pages = [
  { id: "chat", label: "Chat", Icon: ChatIcon, Page: ChatPage },
  { id: "training", label: "Training", Icon: TrainingIcon, Page: TrainingPage },
  { id: "preferences", label: "Preferences", Icon: PreferencesIcon, Page: PreferencesPage },
  { id: "checkpoints", label: "Checkpoints", Icon: CheckpointsIcon, Page: CheckpointsPage },
  { id: "tools", label: "Tools", Icon: ToolsIcon, Page: ToolsPage },
  { id: "models", label: "Models", Icon: ModelsIcon, Page: ModelsPage },
  { id: "settings", label: "Settings", Icon: SettingsIcon, Page: SettingsPage },
] as const;
type PageId = (typeof pages)[number]["id"];

function pageFromHash(): PageId {
  // "#/training", also with extra parameters after it ("#/training&x=1").
  const h = window.location.hash.replace(/^#\/?/, "").split(/[&?/]/)[0];
  return pages.find((p) => p.id === h)?.id ?? "chat";
}

type Theme = "light" | "dark";
const themeKey = "clawrl.theme";

/** Light/dark: the system's preference until the user picks one with the toggle (remembered). */
function useTheme(): [Theme, () => void] {
  const media = window.matchMedia("(prefers-color-scheme: dark)");
  const stored = (): Theme | null => {
    try {
      const t = localStorage.getItem(themeKey);
      return t === "light" || t === "dark" ? t : null;
    } catch {
      return null;
    }
  };
  const [theme, setTheme] = useState<Theme>(() => stored() ?? (media.matches ? "dark" : "light"));
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  useEffect(() => {
    const on = (e: MediaQueryListEvent) => stored() === null && setTheme(e.matches ? "dark" : "light");
    media.addEventListener("change", on);
    return () => media.removeEventListener("change", on);
  }, [media]);
  const toggle = () =>
    setTheme((t) => {
      const next = t === "dark" ? "light" : "dark";
      try {
        localStorage.setItem(themeKey, next);
      } catch {
        // not remembered
      }
      return next;
    });
  return [theme, toggle];
}

function Shell() {
  const { connected, status } = useCore();
  const [page, setPage] = useState<PageId>(pageFromHash);
  const [theme, toggleTheme] = useTheme();
  // A page left with unsaved changes (Settings): where the user meant to go, while the dialog asks.
  const [leaving, setLeaving] = useState<PageId | null>(null);
  const pageRef = useRef(page);
  useEffect(() => {
    pageRef.current = page;
  }, [page]);
  useEffect(() => {
    const on = () => {
      const next = pageFromHash();
      if (next !== pageRef.current && hasUnsavedChanges()) {
        // A link inside the page, or Back: stay (the address too) and ask first.
        history.replaceState(null, "", `#/${pageRef.current}`);
        setLeaving(next);
        return;
      }
      setPage(next);
    };
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  const stay = () => setLeaving(null);
  const discard = () => {
    const to = leaving;
    setLeaving(null);
    discardUnsavedChanges();
    if (to) window.location.hash = `#/${to}`;
  };
  const Current = pages.find((p) => p.id === page)!.Page;
  return (
    <div className="app">
      <nav className="nav" aria-label="Pages">
        <div className="brand">
          <img className="logo" src={logoUrl} alt="" width={22} height={22} />
          <span className="nav-label">ClawRL</span>
        </div>
        <ul>
          {pages.map((p) => (
            <li key={p.id}>
              <a
                href={`#/${p.id}`}
                onClick={(e) => {
                  if (p.id === page || !hasUnsavedChanges()) return;
                  e.preventDefault();
                  setLeaving(p.id);
                }}
                aria-current={p.id === page ? "page" : undefined}
                className={p.id === page ? "active" : undefined}
                title={p.label}
              >
                <span className="nav-icon">
                  <p.Icon />
                </span>
                <span className="nav-label">{p.label}</span>
              </a>
            </li>
          ))}
        </ul>
        <div className="nav-foot">
          <div className="small muted status-line" title="Serving adapter and learner state">
            <span className={connected ? "dot dot-ok" : "dot dot-bad"} aria-hidden="true" />
            <span className="nav-label">
              {connected ? (status ? `${adapterLabel(status.adapter)} · ${describeTraining(status.training).toLowerCase()}` : "connected") : "offline"}
            </span>
          </div>
          <button
            type="button"
            className="link theme-toggle"
            onClick={toggleTheme}
            aria-label={theme === "dark" ? "Switch to light theme" : "Switch to dark theme"}
          >
            {theme === "dark" ? <SunIcon /> : <MoonIcon />}
            <span className="nav-label">{theme === "dark" ? "Light theme" : "Dark theme"}</span>
          </button>
        </div>
      </nav>
      <main className="main">
        {!connected && (
          <div className="banner" role="alert">
            <span className="spinner" aria-hidden="true" /> Reconnecting… The assistant's engine is not answering; this page recovers by itself when it is back.
          </div>
        )}
        {/* Every page has a level-1 heading; the chat's would take a line from the conversation, so it is for screen readers only. */}
        {page === "chat" && <h1 className="sr-only">Chat</h1>}
        <ErrorBoundary key={page}>
          <Current />
        </ErrorBoundary>
      </main>
      {leaving && (
        <ConfirmDialog title="Discard changes?" cancelLabel="Keep editing" confirmLabel="Discard" focus="cancel" onCancel={stay} onConfirm={discard}>
          <p>Your changes on this page are not saved yet. Leaving now loses them; Keep editing to stay and save them.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

function SignIn({ onToken, problem }: { onToken: (t: string) => void; problem: string | null }) {
  const [t, setT] = useState("");
  return (
    <div className="signin">
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          if (t.trim()) onToken(t.trim());
        }}
      >
        <h1>ClawRL</h1>
        {problem ? (
          <p className="note note-error" role="alert">
            {problem}
          </p>
        ) : (
          <p>
            Open the sign-in link that ClawRL showed when it started, or paste the token shown with it.
            <span className="small muted" style={{ display: "block" }} title="The command that starts the assistant's engine">
              From a terminal: the link that “clawrl serve” printed.
            </span>
          </p>
        )}
        <input aria-label="Token" value={t} onChange={(e) => setT(e.target.value)} autoFocus />
        <button type="submit" className="primary" disabled={!t.trim()}>
          Sign in
        </button>
      </form>
    </div>
  );
}

export function App() {
  const [client, setClient] = useState<CoreClient>(() => new CoreClient(resolveConfig()));
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(
    () =>
      client.onUnauthorized((message) => {
        forgetToken();
        setProblem(message);
        setClient(new CoreClient({ ...client.config, token: null }));
      }),
    [client],
  );
  if (!client.token)
    return (
      <SignIn
        problem={problem}
        onToken={(t) => {
          rememberToken(t);
          setProblem(null);
          setClient(new CoreClient({ ...client.config, token: t }));
        }}
      />
    );
  return (
    <CoreProvider client={client}>
      <Shell />
    </CoreProvider>
  );
}

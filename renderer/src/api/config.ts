import type { ClawrlBridge } from "../../../electron/preload/bridge.js";

/** Where the core is and how to sign in: resolved once at start-up. */
export interface CoreConfig {
  apiBase: string;
  token: string | null;
}

declare global {
  interface Window {
    /** What the Electron preload exposes (contextBridge, electron/preload/bridge.ts); absent in a plain browser. */
    clawrl?: ClawrlBridge;
  }
}

const storageKey = "clawrl.token";

function readStorage(): string | null {
  try {
    return sessionStorage.getItem(storageKey);
  } catch {
    return null; // storage disabled: the token lives only in memory for this page
  }
}

/**
 * Token sources, in order: the Electron preload, the `#token=` fragment of the sign-in URL
 * that `clawrl serve` prints (moved to sessionStorage and removed from the address bar so it
 * is not bookmarked or shared by accident), then sessionStorage from an earlier load.
 */
export function resolveConfig(win: Window = window): CoreConfig {
  const bridge = win.clawrl;
  const apiBase = (bridge?.apiBase || win.location.origin).replace(/\/+$/, "");
  if (bridge?.token) return { apiBase, token: bridge.token };

  const { token: fromUrl, rest } = splitTokenFromHash(win.location.hash);
  if (fromUrl) {
    try {
      sessionStorage.setItem(storageKey, fromUrl);
    } catch {
      // keep it in memory only
    }
    win.history.replaceState(null, "", win.location.pathname + win.location.search + (rest ? `#${rest}` : ""));
    return { apiBase, token: fromUrl };
  }
  return { apiBase, token: readStorage() };
}

/**
 * The sign-in token in a URL fragment, and the fragment without it: `#token=T` → "",
 * `#/training&token=T` (or `?token=T`) → "/training", so a deep link opens its page.
 */
export function splitTokenFromHash(hash: string): { token: string | null; rest: string } {
  const parts = hash.replace(/^#/, "").split(/[&?]/);
  let token: string | null = null;
  const kept: string[] = [];
  for (const p of parts) {
    if (p.startsWith("token=")) token = decodeURIComponent(p.slice("token=".length)) || token;
    else if (p) kept.push(p);
  }
  return { token, rest: kept.join("&") };
}

/** Drops a token the core refused. */
export function forgetToken(): void {
  try {
    sessionStorage.removeItem(storageKey);
  } catch {
    // nothing stored
  }
}

/** Stores a token typed by the user on the sign-in screen. */
export function rememberToken(token: string): void {
  try {
    sessionStorage.setItem(storageKey, token);
  } catch {
    // memory only
  }
}

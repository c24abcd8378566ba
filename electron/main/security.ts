// The window's security decisions as plain functions (no electron import), so tests check
// them without Electron. index.ts wires them into BrowserWindow / session / webContents.
import type { BrowserWindowConstructorOptions } from "electron";

/**
 * The Content-Security-Policy main adds to every response the window receives (the renderer's
 * meta tag says the same; when both apply, the browser enforces both). The UI is served by the
 * core on a loopback origin, so 'self' covers the API and the event stream: no remote content,
 * no inline or eval'd script, no plugins, no framing.
 */
export function contentSecurityPolicy(): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    // React sets style attributes; no inline <style> from outside.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "frame-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Parses a CSP string into directive → sources, for comparing policies. */
export function parseCsp(policy: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of policy.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out.set(name.toLowerCase(), sources);
  }
  return out;
}

/** Response headers with our CSP set (any CSP the server sent is replaced, whatever its case). */
export function withCsp(headers: Record<string, string[]> | undefined, policy = contentSecurityPolicy()): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (k.toLowerCase() !== "content-security-policy") out[k] = v;
  out["Content-Security-Policy"] = [policy];
  return out;
}

function parseUrl(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** Main-frame navigation stays on the app's own origin (the core's loopback server). */
export function isAllowedNavigation(url: string, appOrigin: string): boolean {
  const u = parseUrl(url);
  const app = parseUrl(appOrigin);
  if (!u || !app) return false;
  return (u.protocol === "http:" || u.protocol === "https:") && u.origin === app.origin;
}

/** A link worth handing to the system browser: http(s) only (never file:, javascript:, custom schemes). */
export function externalUrl(url: string): string | null {
  const u = parseUrl(url);
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) return null;
  if (u.username || u.password) return null;
  return u.href;
}

export interface WindowOpenDecision {
  action: "deny";
  /** Open this in the system browser instead (null: drop it). */
  openExternal: string | null;
}

/**
 * window.open / target=_blank: the app never opens a second window. Outside http(s) links go to
 * the system browser; links back into the app (and anything else) are dropped.
 */
export function decideWindowOpen(url: string, appOrigin: string): WindowOpenDecision {
  if (isAllowedNavigation(url, appOrigin)) return { action: "deny", openExternal: null };
  return { action: "deny", openExternal: externalUrl(url) };
}

/** Permissions the UI may get: writing to the clipboard (the copy buttons), from our origin only. */
export function isAllowedPermission(permission: string, requestingUrl: string, appOrigin: string): boolean {
  return permission === "clipboard-sanitized-write" && isAllowedNavigation(requestingUrl, appOrigin);
}

export interface WindowOptionsInput {
  preload: string;
  bounds?: { x?: number; y?: number; width: number; height: number };
  icon?: string;
}

export const minWindowSize = { width: 720, height: 480 } as const;
export const defaultWindowSize = { width: 1200, height: 800 } as const;

/** The one BrowserWindow: isolated, sandboxed, no Node in the page, web security on. */
export function windowOptions(input: WindowOptionsInput): BrowserWindowConstructorOptions {
  const b: NonNullable<WindowOptionsInput["bounds"]> = input.bounds ?? { ...defaultWindowSize };
  return {
    ...(b.x !== undefined && b.y !== undefined ? { x: b.x, y: b.y } : {}),
    width: b.width,
    height: b.height,
    minWidth: minWindowSize.width,
    minHeight: minWindowSize.height,
    title: "ClawRL",
    // Shown on ready-to-show, so the user never sees an unpainted white window.
    show: false,
    ...(input.icon ? { icon: input.icon } : {}),
    webPreferences: {
      preload: input.preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      experimentalFeatures: false,
      navigateOnDragDrop: false,
      safeDialogs: true,
      spellcheck: true,
    },
  };
}

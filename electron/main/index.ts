// Electron main: the shell only. One window, a tray, the menu, and the core in its own
// process (coreProcess.ts). Every decision lives in a plain function in this folder (tested
// without Electron); this file only wires them to Electron.
import path from "node:path";
import {
  app,
  BrowserWindow,
  dialog,
  ipcMain,
  Menu,
  nativeImage,
  screen,
  session,
  shell,
  Tray,
  type IpcMainEvent,
  type IpcMainInvokeEvent,
  type WebContents,
} from "electron";
import { coreEnv } from "../shared/coreMessages.js";
import { ipcChannels, type BridgeConfig } from "../shared/ipc.js";
import { CoreSupervisor, type CoreEndpoint } from "./coreProcess.js";
import { corePortFor, loadCorePort, saveCorePort, startWithPortFallback } from "./corePort.js";
import { fetchLearningStatus, setLearningPaused, trayMenuTemplate, trayTooltip, type LearningState } from "./learning.js";
import { appMenuTemplate } from "./menu.js";
import { decideWindowOpen, isAllowedNavigation, isAllowedPermission, windowOptions, withCsp } from "./security.js";
import { loadWindowState, placeWindow, saveWindowState } from "./windowState.js";

const appName = "ClawRL";
// Bundled layout (electron-vite): out/main/{index,core}.js, out/preload/index.cjs, out/renderer/.
const outDir = path.resolve(import.meta.dirname, "..");
const coreEntry = path.join(outDir, "main", "core.js");
const preloadScript = path.join(outDir, "preload", "index.cjs");
const rendererDir = path.join(outDir, "renderer");
const iconsDir = app.isPackaged ? path.join(process.resourcesPath, "icons") : path.resolve(outDir, "..", "build", "icons");
const statusPollMs = 5000;

let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let core: CoreSupervisor | null = null;
let endpoint: CoreEndpoint | null = null;
let learning: LearningState = "unknown";
let trayNote: string | undefined;
/** what learning is doing ("step 2 of 4, 45%"), shown as the tray's status line while it learns */
let trayDetail: string | undefined;
let quitPhase: "running" | "stopping" | "done" = "running";
/** The last main-frame load failed (core was down): reload once the core is back. */
let loadFailed = false;
/** Reload attempts since the core last became ready (bounded, so a broken page cannot spin). */
let loadRetries = 0;

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.setName(appName);
  app.on("second-instance", () => showWindow());
  app.on("window-all-closed", () => {
    // The tray keeps the app (and learning) alive; Quit is in the tray and the menu.
  });
  app.on("activate", () => showWindow());
  app.on("before-quit", (e) => onBeforeQuit(e));
  app.on("web-contents-created", (_e, contents) => guardContents(contents));
  // Ctrl-C in a terminal, or a service manager stopping us: the same graceful quit as the menu.
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => app.quit());
  app.whenReady().then(main, (err: unknown) => fatal(err));
}

async function main(): Promise<void> {
  const ses = session.defaultSession;
  ses.webRequest.onHeadersReceived((details, callback) => callback({ responseHeaders: withCsp(details.responseHeaders) }));
  ses.setPermissionRequestHandler((wc, permission, callback) => callback(endpoint !== null && isAllowedPermission(permission, wc.getURL(), endpoint.url)));
  ses.setPermissionCheckHandler((wc, permission) => endpoint !== null && wc !== null && isAllowedPermission(permission, wc.getURL(), endpoint.url));

  ipcMain.on(ipcChannels.config, (e: IpcMainEvent) => {
    const ok = isOurWindow(e.sender, e.senderFrame?.url) && endpoint !== null;
    e.returnValue = ok && endpoint ? ({ apiBase: endpoint.url, token: endpoint.token } satisfies BridgeConfig) : null;
  });
  ipcMain.handle(ipcChannels.openModelFile, async (e: IpcMainInvokeEvent) => {
    if (!isOurWindow(e.sender, e.senderFrame?.url)) return null;
    return openModelFile();
  });

  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      appMenuTemplate(process.platform, appName, {
        openModelFile: () => void openModelFile(),
        openDataFolder: () => void (endpoint ? shell.openPath(endpoint.dataDir) : undefined),
      }),
    ),
  );

  // The same port run after run (corePort.ts): the window's origin and outside clients' baseUrl hold.
  const portFile = path.join(app.getPath("userData"), "core-port.json");
  const remembered = loadCorePort(portFile);
  core = new CoreSupervisor({
    entry: coreEntry,
    env: { ...process.env, [coreEnv.uiDir]: rendererDir },
    launch: (previous, failedStarts) => ({ env: { [coreEnv.port]: String(corePortFor(previous?.url ?? null, failedStarts, remembered)) } }),
  });
  core.on("ready", (ep) => {
    try {
      saveCorePort(portFile, Number(new URL(ep.url).port));
    } catch (err) {
      console.warn(`[main] could not remember the core's port: ${(err as Error).message}`);
    }
  });
  core.on("output", ({ stream, text }) => (stream === "stderr" ? process.stderr : process.stdout).write(`[core] ${text}`));
  core.on("exit", ({ code, signal, expected }) => {
    endpoint = null;
    if (!expected) console.error(`[main] core exited unexpectedly (${signal ?? `code ${code}`}); restarting`);
    setLearning("offline");
  });
  core.on("ready", (ep) => onCoreReady(ep));
  core.on("failed", (err) => fatal(err));

  createTray();
  try {
    await startWithPortFallback(core);
  } catch (err) {
    fatal(err);
  }
  setInterval(() => void refreshLearning(), statusPollMs).unref();
}

function onCoreReady(ep: CoreEndpoint): void {
  const shown = win?.webContents.getURL() ?? "";
  const originChanged = !shown || !isAllowedNavigation(shown, ep.url);
  endpoint = ep;
  loadRetries = 0;
  void refreshLearning();
  if (!win) {
    createWindow(ep);
  } else if (originChanged || loadFailed) {
    // The core came back elsewhere, or the page never loaded: load the UI from the core's
    // origin (the preload re-reads its config on every load).
    loadFailed = false;
    void win.loadURL(ep.url); // void: a failed load is reported by did-fail-load, which retries
  }
  // Same origin: the page's own reconnect logic picks the core up again.
}

function createWindow(ep: CoreEndpoint): void {
  const stateFile = path.join(app.getPath("userData"), "window-state.json");
  const placed = placeWindow(
    loadWindowState(stateFile),
    [screen.getPrimaryDisplay(), ...screen.getAllDisplays()].map((d) => d.workArea),
  );
  const icon = path.join(iconsDir, "512x512.png");
  win = new BrowserWindow(windowOptions({ preload: preloadScript, bounds: placed, icon }));
  if (placed.maximized) win.maximize();
  win.once("ready-to-show", () => win?.show());
  // The renderer's beforeunload holds the window while Settings has unsaved changes; Electron
  // would cancel the close silently, so ask as the app's own dialog does.
  win.webContents.on("will-prevent-unload", (event) => {
    const choice = dialog.showMessageBoxSync(win!, {
      type: "question",
      buttons: ["Keep editing", "Discard"],
      defaultId: 0,
      cancelId: 0,
      title: "Discard changes?",
      message: "Discard changes?",
      detail: "Your settings are not saved yet. Closing now loses them.",
    });
    if (choice === 1) event.preventDefault(); // let the window close or reload
  });
  win.webContents.on("did-fail-load", (_e, code, desc, url, isMainFrame) => {
    // -3 (ERR_ABORTED) is a load replaced by another one, not a failure.
    if (!isMainFrame || code === -3) return;
    console.error(`[main] could not load ${url}: ${desc}`);
    loadFailed = true;
    // The core is up (it was between restarts when we tried): try again shortly; otherwise
    // onCoreReady reloads when it is back.
    if (endpoint && loadRetries < 5) {
      loadRetries += 1;
      // void: a load that fails again is reported by did-fail-load (this handler), not by the promise.
      setTimeout(() => {
        if (endpoint && loadFailed && win) void win.loadURL(endpoint.url);
      }, 1000 * loadRetries);
    }
  });
  win.webContents.on("did-finish-load", () => {
    loadFailed = false;
  });
  const remember = () => {
    if (!win || win.isMinimized() || win.isFullScreen()) return;
    try {
      saveWindowState(stateFile, { bounds: win.isMaximized() ? win.getNormalBounds() : win.getBounds(), maximized: win.isMaximized() });
    } catch (err) {
      console.error(`[main] could not save window state: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  win.on("close", (e) => {
    remember();
    // Closing the window hides it to the tray; quitting is explicit.
    if (quitPhase === "running" && tray) {
      e.preventDefault();
      win?.hide();
    }
  });
  win.on("closed", () => {
    win = null;
  });
  void win.loadURL(ep.url); // void: a failed load is reported by did-fail-load, which retries
}

/** The request comes from our window's main frame showing the app's own origin. */
function isOurWindow(contents: WebContents, frameUrl: string | undefined): boolean {
  return win !== null && contents === win.webContents && endpoint !== null && isAllowedNavigation(frameUrl ?? contents.getURL(), endpoint.url);
}

/** Navigation and new windows: stay on the app's origin; outside http(s) links open in the browser. */
function guardContents(contents: WebContents): void {
  contents.on("will-navigate", (e, url) => {
    if (endpoint && isAllowedNavigation(url, endpoint.url)) return;
    e.preventDefault();
    const d = decideWindowOpen(url, endpoint?.url ?? "");
    if (d.openExternal) void shell.openExternal(d.openExternal);
  });
  contents.on("will-redirect", (e, url) => {
    if (!endpoint || !isAllowedNavigation(url, endpoint.url)) e.preventDefault();
  });
  contents.on("will-attach-webview", (e) => e.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    const d = decideWindowOpen(url, endpoint?.url ?? "");
    if (d.openExternal) void shell.openExternal(d.openExternal);
    return { action: d.action };
  });
}

async function openModelFile(): Promise<string | null> {
  const opts = { title: "Import a GGUF model", properties: ["openFile" as const], filters: [{ name: "GGUF models", extensions: ["gguf"] }] };
  const r = win ? await dialog.showOpenDialog(win, opts) : await dialog.showOpenDialog(opts);
  return r.canceled || r.filePaths.length === 0 ? null : r.filePaths[0];
}

function showWindow(): void {
  if (!win) {
    if (endpoint) createWindow(endpoint);
    return;
  }
  if (win.isMinimized()) win.restore();
  win.show();
  win.focus();
}

function createTray(): void {
  const image = nativeImage.createFromPath(path.join(iconsDir, process.platform === "darwin" ? "trayTemplate.png" : "tray.png"));
  tray = new Tray(image);
  tray.on("click", () => showWindow());
  renderTray();
}

function renderTray(): void {
  if (!tray) return;
  tray.setToolTip(trayTooltip(learning, trayDetail));
  tray.setContextMenu(
    Menu.buildFromTemplate(
      trayMenuTemplate(
        learning,
        {
          showWindow,
          pause: () => void toggleLearning(true),
          resume: () => void toggleLearning(false),
          quit: () => app.quit(),
        },
        trayNote,
        trayDetail,
      ),
    ),
  );
}

function setLearning(state: LearningState, note?: string, detail?: string): void {
  if (state === learning && note === trayNote && detail === trayDetail) return;
  learning = state;
  trayNote = note;
  trayDetail = detail;
  renderTray();
}

async function refreshLearning(): Promise<void> {
  if (!endpoint) return setLearning("offline");
  const r = await fetchLearningStatus({ apiBase: endpoint.url, token: endpoint.token });
  // A rollback the learner made by itself is said in the tray (for a day); another note (a failed pause...) stays.
  setLearning(r.state, r.note ?? (trayNote?.startsWith("Rolled back") ? undefined : trayNote), r.detail);
}

async function toggleLearning(paused: boolean): Promise<void> {
  if (!endpoint) return;
  const r = await setLearningPaused({ apiBase: endpoint.url, token: endpoint.token }, paused);
  if (r.ok) {
    setLearning(paused ? "paused" : "idle");
    void refreshLearning();
  } else {
    setLearning(learning, r.message);
  }
}

/**
 * Quit: the first one stops the core gracefully (it stops admitting, finishes or cancels
 * in-flight work, stops the trainer at a step boundary, flushes the store) and then quits;
 * a second quit while that runs kills the core and exits at once.
 */
function onBeforeQuit(e: Electron.Event): void {
  if (quitPhase === "done") return;
  e.preventDefault();
  if (quitPhase === "stopping") {
    core?.kill();
    quitPhase = "done";
    app.exit(0);
    return;
  }
  quitPhase = "stopping";
  setLearning("offline", "Quitting…");
  const stop = core ? core.stop() : Promise.resolve();
  void stop.finally(() => {
    quitPhase = "done";
    tray?.destroy();
    app.quit();
  });
}

function fatal(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  console.error(`[main] ${message}`);
  dialog.showErrorBox(`${appName} could not start its core`, message);
  quitPhase = "done";
  core?.kill();
  app.exit(1);
}

// Electron main process: shell only (window, tray, lifecycle). Filled in by the Electron shell issue.
import { app, BrowserWindow } from "electron";

app.whenReady().then(() => {
  const win = new BrowserWindow({ webPreferences: { contextIsolation: true, sandbox: true, nodeIntegration: false } });
  void win.loadURL("about:blank");
});

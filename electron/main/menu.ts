// The application menu: the usual roles (macOS app menu, Edit, View, Window, Help). No electron import.
import type { MenuItemConstructorOptions } from "electron";

export interface MenuActions {
  openModelFile?: () => void;
  openDataFolder?: () => void;
  openProjectPage?: () => void;
}

export function appMenuTemplate(platform: NodeJS.Platform, appName: string, actions: MenuActions = {}): MenuItemConstructorOptions[] {
  const mac = platform === "darwin";
  const fileItems: MenuItemConstructorOptions[] = [];
  if (actions.openModelFile) fileItems.push({ label: "Import Model…", accelerator: "CmdOrCtrl+O", click: () => actions.openModelFile?.() });
  if (actions.openDataFolder) fileItems.push({ label: "Open Data Folder", click: () => actions.openDataFolder?.() });
  if (fileItems.length) fileItems.push({ type: "separator" });
  fileItems.push(mac ? { role: "close" } : { role: "quit" });

  const template: MenuItemConstructorOptions[] = [];
  if (mac) {
    template.push({
      label: appName,
      submenu: [
        { role: "about" },
        { type: "separator" },
        { role: "services" },
        { type: "separator" },
        { role: "hide" },
        { role: "hideOthers" },
        { role: "unhide" },
        { type: "separator" },
        { role: "quit" },
      ],
    });
  }
  template.push(
    { label: "File", submenu: fileItems },
    { role: "editMenu" },
    {
      label: "View",
      submenu: [
        { role: "reload" },
        { role: "forceReload" },
        { role: "toggleDevTools" },
        { type: "separator" },
        { role: "resetZoom" },
        { role: "zoomIn" },
        { role: "zoomOut" },
        { type: "separator" },
        { role: "togglefullscreen" },
      ],
    },
    { role: "windowMenu" },
    {
      role: "help",
      submenu: actions.openProjectPage ? [{ label: "ClawRL on the Web", click: () => actions.openProjectPage?.() }] : [{ label: `${appName}`, enabled: false }],
    },
  );
  return template;
}

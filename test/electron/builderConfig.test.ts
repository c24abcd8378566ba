// build/electron-builder.json: valid for electron-builder (its own schema check), the required
// fields and targets, icons that exist at the right sizes, and `files` / `asarUnpack` globs that
// match real paths in node_modules, with only the target platform's node-llama-cpp binaries.
import assert from "node:assert/strict";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, it } from "node:test";
import { Minimatch } from "minimatch";
import { PNG } from "pngjs";
import { repoRoot } from "../helpers/cli.js";

const require = createRequire(import.meta.url);
const configPath = path.join(repoRoot, "build", "electron-builder.json");
const config = JSON.parse(fs.readFileSync(configPath, "utf8")) as Record<string, unknown> & {
  appId: string;
  productName: string;
  files: string[];
  asarUnpack: string[];
  extraResources: { from: string; to: string; filter: string[] }[];
  linux: { target: string[]; icon: string };
  win: { target: string[]; icon: string };
  mac: { target: string[]; icon: string };
};
const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
  main: string;
  scripts: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};

/** electron-builder's own configuration check (the one `electron-builder` runs first). */
async function validate(cfg: unknown): Promise<void> {
  const { validateConfiguration } = require("app-builder-lib/out/util/config/config") as {
    validateConfiguration: (c: unknown, logger: unknown) => Promise<void>;
  };
  const { DebugLogger } = require("builder-util") as { DebugLogger: new (enabled: boolean) => unknown };
  await validateConfiguration(cfg, new DebugLogger(false));
}

/** Every file under dir, as paths relative to the repository root with forward slashes. */
function walk(dir: string, out: string[] = []): string[] {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(path.relative(repoRoot, p).split(path.sep).join("/"));
  }
  return out;
}

/** electron-builder's macro expansion for file patterns: ${os} is mac | linux | win. */
function expand(pattern: string, os: string, arch: string): string {
  return pattern.replaceAll("${os}", os).replaceAll("${arch}", arch);
}

/**
 * electron-builder's filter semantics for node_modules files: production dependencies start
 * included, then the patterns apply in order and the last one that matches decides.
 */
function included(file: string, patterns: string[], os: string, arch: string): boolean {
  let match = true;
  for (const raw of patterns) {
    const m = new Minimatch(expand(raw, os, arch), { dot: true });
    if (match !== m.negate) continue;
    match = m.match(file);
  }
  return match;
}

const nodeModulePatterns = config.files.filter((p) => p.replace(/^!/, "").startsWith("node_modules/"));
const llamaBinFiles = [
  ...walk(path.join(repoRoot, "node_modules", "@node-llama-cpp")),
  ...walk(path.join(repoRoot, "node_modules", "node-llama-cpp", "bins")),
].filter((f) => /\/bins\//.test(f));

function binPlatform(file: string): string {
  return /^node_modules\/@node-llama-cpp\/([^/]+)\//.exec(file)?.[1] ?? /bins\/([^/]+)\//.exec(file)?.[1] ?? "";
}

describe("electron-builder configuration", () => {
  it("passes electron-builder's own schema check, and a broken copy does not", async () => {
    await validate(config);
    await assert.rejects(validate({ ...config, linux: { ...config.linux, notAnOption: true } }), /Invalid configuration object/);
  });

  it("names the app and builds AppImage + deb, nsis and dmg", () => {
    assert.match(config.appId, /^[a-z0-9]+(\.[a-z0-9-]+)+$/);
    assert.equal(config.productName, "ClawRL");
    assert.deepEqual(config.linux.target.slice().sort(), ["AppImage", "deb"]);
    assert.deepEqual(config.win.target, ["nsis"]);
    assert.deepEqual(config.mac.target, ["dmg"]);
    assert.equal(config.asar, true);
  });

  it("npm run dist builds the bundles, then runs electron-builder with this file", () => {
    assert.match(pkg.scripts.dist, /electron-vite\.js build && electron-builder --config build\/electron-builder\.json/);
    assert.equal(pkg.main, "out/main/index.js");
    assert.ok(config.files.includes("out/**/*"), "the bundles are packaged");
  });

  it("icons exist at the sizes their names say; the app icon is large enough for icns/ico", () => {
    const big = PNG.sync.read(fs.readFileSync(path.join(repoRoot, config.mac.icon)));
    assert.ok(big.width >= 512 && big.width === big.height, `${config.mac.icon} is ${big.width}x${big.height}`);
    assert.equal(config.win.icon, config.mac.icon);
    const linuxIcons = fs.readdirSync(path.join(repoRoot, config.linux.icon)).filter((f) => /^\d+x\d+\.png$/.test(f));
    assert.ok(linuxIcons.includes("256x256.png") && linuxIcons.includes("512x512.png"), linuxIcons.join(", "));
    for (const f of linuxIcons) {
      const png = PNG.sync.read(fs.readFileSync(path.join(repoRoot, config.linux.icon, f)));
      assert.equal(`${png.width}x${png.height}.png`, f);
    }
  });

  it("the tray and window icons main loads from resources/icons are shipped", () => {
    const res = config.extraResources.find((r) => r.to === "icons");
    assert.ok(res, "extraResources copies build/icons to resources/icons");
    for (const name of ["tray.png", "trayTemplate.png", "trayTemplate@2x.png", "512x512.png"]) {
      assert.ok(res.filter.includes(name), name);
      assert.ok(fs.existsSync(path.join(repoRoot, res.from, name)), `${res.from}/${name} exists`);
    }
  });

  it("every asarUnpack glob matches installed files, unless it names an optional dependency that is not installed", () => {
    const files = walk(path.join(repoRoot, "node_modules", "node-llama-cpp", "bins"))
      .concat(walk(path.join(repoRoot, "node_modules", "@node-llama-cpp")))
      .concat(walk(path.join(repoRoot, "node_modules", "@tensorflow")));
    for (const glob of config.asarUnpack) {
      const m = new Minimatch(glob, { dot: true, matchBase: false });
      const hits = files.filter((f) => m.match(f));
      const pkgName = /^node_modules\/((?:@[^/]+\/)?[^/*]+)/.exec(glob)?.[1];
      if (hits.length === 0) {
        if (glob === "node_modules/node-llama-cpp/llama/localBuilds/**/*" || glob === "**/*.node") continue; // checked below
        assert.ok(
          pkgName && pkg.optionalDependencies?.[pkgName] && !fs.existsSync(path.join(repoRoot, "node_modules", pkgName)),
          `asarUnpack glob ${glob} matches nothing`,
        );
      }
    }
    // The pieces that must load from outside the asar: llama.cpp's addon and libraries, tfjs's wasm.
    const unpacked = (f: string) => config.asarUnpack.some((g) => new Minimatch(g, { dot: true }).match(f));
    const addon = files.find((f) => f.endsWith("/bins/linux-x64/llama-addon.node"));
    assert.ok(addon && unpacked(addon), "node-llama-cpp's linux-x64 addon is unpacked");
    assert.ok(
      files.some((f) => f.endsWith("/libllama.v0.5.0.so") || /libllama.*\.so/.test(f)),
      "libllama is installed",
    );
    for (const f of files.filter((x) => /\/bins\/.*\.(so|node|dll|dylib|metal)$/.test(x))) assert.ok(unpacked(f), `${f} is unpacked`);
    const wasm = files.filter((f) => f.startsWith("node_modules/@tensorflow/tfjs-backend-wasm/dist/") && f.endsWith(".wasm"));
    assert.ok(wasm.length >= 3, "tfjs wasm binaries are installed");
    for (const f of wasm) assert.ok(unpacked(f), `${f} is unpacked`);
    assert.ok(unpacked("node_modules/some-other-addon/build/Release/addon.node"), "any native addon is unpacked");
  });

  it("the files filters keep only the target platform's node-llama-cpp binaries", () => {
    assert.ok(llamaBinFiles.length > 0, "node-llama-cpp prebuilt binaries are installed");
    const installedPlatforms = new Set(llamaBinFiles.map(binPlatform));
    for (const [os, arch] of [
      ["linux", "x64"],
      ["linux", "arm64"],
      ["mac", "arm64"],
      ["win", "x64"],
    ]) {
      const kept = llamaBinFiles.filter((f) => included(f, nodeModulePatterns, os, arch));
      for (const f of kept) assert.ok(binPlatform(f).startsWith(`${os}-${arch}`), `${os}/${arch} build would ship ${f}`);
      const expected = [...installedPlatforms].filter((p) => p.startsWith(`${os}-${arch}`));
      for (const p of expected)
        assert.ok(
          kept.some((f) => binPlatform(f) === p),
          `${os}/${arch} build keeps ${p}'s binaries`,
        );
    }
    // The JavaScript of node-llama-cpp itself is never filtered out.
    assert.equal(included("node_modules/node-llama-cpp/dist/index.js", nodeModulePatterns, "linux", "x64"), true);
    assert.equal(included("node_modules/@node-llama-cpp/win-x64/package.json", nodeModulePatterns, "linux", "x64"), true);
  });
});

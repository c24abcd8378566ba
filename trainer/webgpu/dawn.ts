/**
 * Dawn (the `webgpu` npm package, an optional dependency) under Node: creates the GPU object,
 * finds an adapter, says whether it is a software renderer, and opens a device with a time
 * limit. Nothing here throws anything but an Error whose first line is a skip reason; nothing
 * here touches tfjs (see ./start.ts).
 *
 * Adapter search: Dawn's default path first (Vulkan on Linux, skipped when no Vulkan driver is
 * listed; D3D12 on Windows; Metal on macOS). When that finds nothing on Linux and software is
 * allowed (the webgpu backend was asked for by name), two software routes follow: Vulkan through
 * the SwiftShader ICD that Chromium and Chrome ship (found on disk, given to the Vulkan loader as
 * VK_DRIVER_FILES), then OpenGL ES through Mesa's llvmpipe (EGL_PLATFORM=surfaceless, a
 * "compatibility" adapter). CLAWRL_WEBGPU_ROUTE=default|swiftshader|opengles forces one route
 * (benchmarks, tests).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { vulkanDriverListed } from "../../common/vulkanDrivers.js";

const require = createRequire(import.meta.url);

// Just the parts of the WebGPU API used here: `webgpu` is optional, so its types may be absent.
export interface GpuLimitsLike {
  readonly maxBufferSize: number;
  readonly maxStorageBufferBindingSize: number;
  readonly [name: string]: unknown;
}
export interface GpuAdapterInfoLike {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter?: boolean;
}
export interface GpuDeviceLike {
  readonly limits: GpuLimitsLike;
  readonly lost: Promise<{ reason: string; message: string }>;
  onuncapturederror: ((ev: { error: { message: string } }) => void) | null;
  destroy(): void;
}
export interface GpuAdapterLike {
  readonly info: GpuAdapterInfoLike;
  readonly limits: GpuLimitsLike;
  readonly features: ReadonlySet<string>;
  /** Older spelling; newer Dawn reports it in `info`. */
  readonly isFallbackAdapter?: boolean;
  requestDevice(descriptor?: { requiredFeatures?: string[]; requiredLimits?: Record<string, number> }): Promise<GpuDeviceLike>;
}
export interface GpuLike {
  requestAdapter(options?: { powerPreference?: string; featureLevel?: string }): Promise<GpuAdapterLike | null>;
}
export type CreateGpu = (dawnOptions: string[]) => GpuLike;

export type Route = "default" | "swiftshader" | "opengles";

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** Dawn backend behind the adapter: "vulkan", "d3d12", "metal" or "opengles". */
  backend: string;
  /** Software renderer's name ("SwiftShader", "lavapipe", "llvmpipe", ...), or null for a GPU. */
  software: string | null;
  /** Short name for logs: the software renderer's, else the device's. */
  name: string;
  /** Largest GPUBuffer, and the largest part of one a shader can bind (a tensor is bound whole). */
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
}

export interface DawnDevice {
  summary: AdapterSummary;
  /** The device, for tfjs-backend-webgpu's WebGPUBackend, and the adapter's info. */
  device: GpuDeviceLike;
  adapterInfo: GpuAdapterInfoLike;
  /** The GPU object the device came from (tfjs-backend-webgpu looks for navigator.gpu). */
  gpu: GpuLike;
  /** Dawn's globals (GPUBufferUsage, GPUMapMode, ...), which tfjs-backend-webgpu uses bare. */
  globals: Record<string, unknown>;
  /** Why the device was lost, once it is. */
  lostReason(): string | null;
  /**
   * The first GPU error Dawn reported (validation, out of memory), once there is one: the
   * command it came from did not run, so any result computed since may be wrong.
   */
  firstError(): string | null;
}

export interface OpenOptions {
  /** Take a software adapter and try the software routes (the backend was asked for by name). */
  allowSoftware: boolean;
  /** Time limits; a hung driver is skipped, not waited for. */
  adapterTimeoutMs?: number;
  deviceTimeoutMs?: number;
  /** Where to report device loss and uncaptured GPU errors after the device is open. */
  log?: (line: string) => void;
  /** Tests: stand-ins for Dawn and the environment. */
  createGpu?: CreateGpu;
  globals?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  findSwiftShader?: () => string | null;
  hasVulkanDriver?: () => boolean;
}

const SOFTWARE: Array<[RegExp, (backend: string) => string]> = [
  [/swiftshader/i, () => "SwiftShader"],
  [/lavapipe|llvmpipe/i, (backend) => (backend === "vulkan" ? "lavapipe" : "llvmpipe")],
  [/softpipe/i, () => "softpipe"],
  [/microsoft basic render|\bwarp\b/i, () => "Microsoft Basic Render Driver"],
];

/** The software renderer an adapter is, or null for a GPU. */
export function softwareRenderer(info: GpuAdapterInfoLike, backend: string, isFallback = false): string | null {
  const text = [info.vendor, info.architecture, info.device, info.description].join(" ");
  for (const [re, name] of SOFTWARE) if (re.test(text)) return name(backend);
  if (isFallback || info.isFallbackAdapter) return `fallback adapter${info.description ? ` ${info.description}` : ""}`;
  return null;
}

function defaultBackend(platform: NodeJS.Platform): string {
  return platform === "win32" ? "d3d12" : platform === "darwin" ? "metal" : "vulkan";
}

function deviceName(info: GpuAdapterInfoLike): string {
  // Dawn reports the device name lower-cased with dashes ("nvidia-h100-80gb-hbm3").
  const d = /^[a-z0-9-]+$/.test(info.device) ? info.device.replace(/-+/g, " ").trim() : info.device.trim();
  return d || info.description || [info.vendor, info.architecture].filter(Boolean).join(" ") || "unknown adapter";
}

/** Chromium's or Chrome's SwiftShader Vulkan ICD on this machine, if any. */
export function findSwiftShaderIcd(home = os.homedir()): string | null {
  const dirs = [
    "/usr/lib/chromium",
    "/usr/lib/chromium-browser",
    "/opt/google/chrome",
    "/opt/chromium.org/chromium",
    "/snap/chromium/current/usr/lib/chromium-browser",
  ];
  // Playwright's own Chromium builds ship it too.
  const pw = path.join(home, ".cache", "ms-playwright");
  try {
    for (const e of fs.readdirSync(pw).sort().reverse())
      if (e.startsWith("chromium")) dirs.push(path.join(pw, e, "chrome-linux"), path.join(pw, e, "chrome-linux64"));
  } catch {
    // no Playwright browsers
  }
  for (const d of dirs) {
    const f = path.join(d, "vk_swiftshader_icd.json");
    if (fs.existsSync(f) && fs.existsSync(path.join(d, "libvk_swiftshader.so"))) return f;
  }
  return null;
}

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return (msg.split("\n")[0] ?? msg).trim();
}

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface Found {
  gpu: GpuLike;
  adapter: GpuAdapterLike;
  backend: string;
}

async function loadDawn(): Promise<{ create: CreateGpu; globals: Record<string, unknown> }> {
  try {
    require.resolve("webgpu");
  } catch {
    throw new Error("not installed (optional dependency webgpu)");
  }
  try {
    // Through the package's entry, which loads dist/<platform>-<arch>/dawn.node and makes
    // GPUDevice.destroy() unmap the device's buffers. A variable name: the package is optional.
    const pkg = "webgpu";
    const dawn = (await import(pkg)) as { create: CreateGpu; globals: Record<string, unknown> };
    return dawn;
  } catch (e) {
    throw new Error(`Dawn failed to load: ${firstLine(e)}`, { cause: e });
  }
}

/**
 * Finds an adapter and opens a device on it, or throws an Error whose message is the reason to
 * skip webgpu ("not installed ...", "no adapter ...", "software adapter X: slower than wasm",
 * "requestDevice did not answer within 5000 ms", ...).
 */
export async function openDawn(o: OpenOptions): Promise<DawnDevice> {
  const env = o.env ?? process.env;
  const platform = o.platform ?? process.platform;
  const log = o.log ?? ((line: string) => console.warn(line));
  if (!o.createGpu) {
    try {
      require.resolve("webgpu");
    } catch {
      throw new Error("not installed (optional dependency webgpu)");
    }
  }
  const dawn = dawnOnDemand(o);
  const { gpu, adapter, backend } = await findAdapter(o, env, platform, routesFor(env, platform, o.allowSoftware), dawn);
  const info = adapter.info;
  const software = softwareRenderer(info, backend, adapter.isFallbackAdapter === true);
  if (software && !o.allowSoftware) throw new Error(`software adapter ${software}: slower than wasm`);
  const device = await openDevice(adapter, o.deviceTimeoutMs ?? 5_000, software ?? deviceName(info));
  const watch = watchDevice(device, log);
  return {
    summary: {
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      backend,
      software,
      name: software ?? deviceName(info),
      maxBufferSize: device.limits.maxBufferSize,
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    },
    device,
    adapterInfo: info,
    gpu,
    globals: dawn.globals(),
    ...watch,
  };
}

/** Dawn's create function, loaded the first time a route needs it (or the test's stand-in), and its globals. */
function dawnOnDemand(o: OpenOptions): { create(): Promise<CreateGpu>; globals(): Record<string, unknown> } {
  let create = o.createGpu;
  let globals = o.globals ?? {};
  return {
    async create() {
      if (!create) {
        const dawn = await loadDawn();
        create = dawn.create;
        globals = dawn.globals;
      }
      return create;
    },
    globals: () => globals,
  };
}

/** The routes to try, in order: the one CLAWRL_WEBGPU_ROUTE forces, else the default and (software allowed, Linux) the software ones. */
function routesFor(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, allowSoftware: boolean): Route[] {
  const forced = env.CLAWRL_WEBGPU_ROUTE as Route | undefined;
  if (forced && !["default", "swiftshader", "opengles"].includes(forced)) {
    throw new Error(`unknown CLAWRL_WEBGPU_ROUTE "${forced}" (one of default, swiftshader, opengles)`);
  }
  return forced ? [forced] : allowSoftware && platform === "linux" ? ["default", "swiftshader", "opengles"] : ["default"];
}

/** How Dawn is asked on one route: instance options, feature level, its backend and the environment it needs; or why the route is skipped. */
type RouteSetup = { options: string[]; featureLevel?: string; backend: string; vars: Record<string, string> } | { skip: string };

function routeSetup(route: Route, o: OpenOptions, env: NodeJS.ProcessEnv, platform: NodeJS.Platform, hasVulkanDriver: () => boolean): RouteSetup {
  const setup = {
    options: [] as string[],
    featureLevel: undefined as string | undefined,
    backend: defaultBackend(platform),
    vars: {} as Record<string, string>,
  };
  if (route === "default" && platform === "linux" && !hasVulkanDriver()) return { skip: "default: no Vulkan driver installed" };
  if (route === "swiftshader") {
    const icd = (o.findSwiftShader ?? findSwiftShaderIcd)();
    if (!icd) return { skip: "swiftshader: no Chromium/Chrome SwiftShader ICD found" };
    setup.vars.VK_DRIVER_FILES = icd;
    setup.backend = "vulkan";
  } else if (route === "opengles") {
    // Mesa's EGL without a display server: a surfaceless platform, not X11/Wayland.
    setup.vars.EGL_PLATFORM = env.EGL_PLATFORM ?? "surfaceless";
    setup.options = ["backend=opengles"];
    setup.featureLevel = "compatibility";
    setup.backend = "opengles";
  }
  return setup;
}

/** Tries the routes in order; the first adapter found, or an Error naming what each route said. */
async function findAdapter(
  o: OpenOptions,
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
  routes: Route[],
  dawn: { create(): Promise<CreateGpu> },
): Promise<Found> {
  const adapterMs = o.adapterTimeoutMs ?? 10_000;
  const hasVulkanDriver = o.hasVulkanDriver ?? (o.createGpu ? () => true : () => vulkanDriverListed(env));
  const tried: string[] = [];
  for (const route of routes) {
    const setup = routeSetup(route, o, env, platform, hasVulkanDriver);
    if ("skip" in setup) {
      tried.push(setup.skip);
      continue;
    }
    const { options, featureLevel, backend, vars } = setup;
    const createGpu = await dawn.create(); // not installed, or not loadable: the reason itself
    // Environment the route needs while Dawn creates its instance and finds adapters; put
    // back afterwards so it does not leak into processes the trainer starts.
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, env[k]]));
    Object.assign(env, vars);
    try {
      const gpu = createGpu(options);
      const adapter = await within(
        gpu.requestAdapter({ powerPreference: "high-performance", ...(featureLevel ? { featureLevel } : {}) }),
        adapterMs,
        "requestAdapter",
      );
      if (!adapter) {
        tried.push(`${route}: none`);
        continue;
      }
      return { gpu, adapter, backend };
    } catch (e) {
      tried.push(`${route}: ${firstLine(e)}`);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete env[k];
        else env[k] = v;
      }
    }
  }
  throw new Error(`no adapter (${tried.join("; ")})`);
}

/** A device with the adapter's own limits (what tfjs-backend-webgpu itself asks for: defaults are far lower). */
async function openDevice(adapter: GpuAdapterLike, deviceMs: number, name: string): Promise<GpuDeviceLike> {
  const L = adapter.limits;
  const requiredLimits: Record<string, number> = {};
  for (const k of [
    "maxBufferSize",
    "maxStorageBufferBindingSize",
    "maxComputeWorkgroupStorageSize",
    "maxComputeWorkgroupsPerDimension",
    "maxComputeWorkgroupSizeX",
    "maxComputeInvocationsPerWorkgroup",
    "maxStorageBuffersPerShaderStage",
  ]) {
    const v = L[k];
    if (typeof v === "number") requiredLimits[k] = v;
  }
  const requiredFeatures = adapter.features.has("timestamp-query") ? ["timestamp-query"] : [];
  try {
    return await within(adapter.requestDevice({ requiredFeatures, requiredLimits }), deviceMs, "requestDevice");
  } catch (e) {
    throw new Error(`device on ${name}: ${firstLine(e)}`, { cause: e });
  }
}

/** Watches the device for loss and uncaptured GPU errors, logging each; what DawnDevice reports of them. */
function watchDevice(device: GpuDeviceLike, log: (line: string) => void): Pick<DawnDevice, "lostReason" | "firstError"> {
  let lost: string | null = null;
  device.lost.then(
    (l) => {
      lost = `${l.reason}${l.message ? `: ${firstLine(l.message)}` : ""}`;
      if (l.reason !== "destroyed") log(`webgpu: device lost (${lost})`);
    },
    () => {},
  );
  // Out-of-memory and validation errors arrive here, not as exceptions: keep the first (reads
  // fail from then on, see start.ts) and report each.
  let firstError: string | null = null;
  device.onuncapturederror = (ev) => {
    const msg = firstLine(ev.error.message);
    firstError ??= msg;
    log(`webgpu: GPU error: ${msg}`);
  };
  return { lostReason: () => lost, firstError: () => firstError };
}

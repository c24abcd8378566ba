/**
 * Starts @tensorflow/tfjs-backend-webgpu (optional dependency) on a Dawn device from ./dawn.ts.
 *
 * What Node needs that a browser gives for free: `navigator.gpu` (the package registers itself
 * and constructs its backend only when it exists), Dawn's globals (GPUBufferUsage, GPUMapMode,
 * ...), and our own backend factory, so tfjs runs on the adapter and device chosen here (with
 * a time limit, the software routes, the adapter's limits) instead of asking navigator.gpu for
 * a core adapter again.
 *
 * Flags, set for training in Node:
 * - WEBGPU_CPU_FORWARD=false: by default an op whose inputs are all small (< 1000 elements) and
 *   still on the CPU runs on tfjs's JS CPU kernels, and its result stays on the CPU, where
 *   dataSync() can read it; the same read of a GPU result fails under Node (see below). So
 *   whether a synchronous read works would depend on where each tensor came from; with the
 *   flag off every op runs on the GPU and a synchronous read fails at once, every time.
 * - WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE=15 (the package default, pinned here): dispatches recorded
 *   per queue submit (a read submits too). Tensors disposed while queued commands use them are
 *   freed only at the next submit, so a larger batch holds more memory; a smaller one pays more
 *   submits (on the software adapters, 2000 chained adds took 1.5 s with 1 and 0.7 s with 15 on
 *   llvmpipe; real GPUs not measured). CLAWRL_WEBGPU_SUBMIT_BATCH overrides it.
 *
 * In Node only async reads work (`await t.data()`, `await t.array()`): dataSync()/arraySync()
 * of GPU data fail with an error that says so.
 *
 * Two repairs: a GPU error (a shader over the device's limits, out of memory) does not throw in
 * WebGPU, the command is just dropped and results come out wrong; here every read after one
 * throws it. And tfjs's AddN kernel binds all its inputs in one shader, past the device's
 * storage-buffer limit (8–16) with more inputs (the trainer sums one square norm per LoRA
 * tensor): it is re-registered to add them in groups that fit.
 */
import { createRequire } from "node:module";
import * as tf from "@tensorflow/tfjs-core";
import { openDawn, type AdapterSummary, type DawnDevice, type OpenOptions } from "./dawn.js";

const require = createRequire(import.meta.url);

export interface WebGpuStarted {
  /** "webgpu (NVIDIA H100, vulkan)", "webgpu (SwiftShader, software)". */
  device: string;
  summary: AdapterSummary;
}

interface WebGpuBackendClass {
  new (device: unknown, adapterInfo: unknown): tf.KernelBackend;
  prototype: { readSync(dataId: object): unknown; hasReadSyncWarned?: boolean };
}

/** The parts of a WebGPUBackend instance used here. */
interface WebGpuBackendLike {
  device: { limits: { maxStorageBuffersPerShaderStage: number } };
  read(dataId: object): Promise<unknown>;
  disposeData(dataId: object, force?: boolean): boolean;
}

const PATCHED = Symbol.for("clawrl.webgpu.readSyncPatched");

/** dataSync() of GPU data dies inside tfjs on `new OffscreenCanvas`; say what to do instead. */
function explainSyncReads(cls: WebGpuBackendClass): void {
  const proto = cls.prototype as WebGpuBackendClass["prototype"] & { [PATCHED]?: boolean };
  if (proto[PATCHED]) return;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the original, called below with the backend as `this`
  const readSync = proto.readSync;
  proto.readSync = function (this: WebGpuBackendClass["prototype"], dataId: object) {
    this.hasReadSyncWarned = true; // its "performance ... is poor" warning precedes the failure
    try {
      return readSync.call(this, dataId);
    } catch (e) {
      if (e instanceof ReferenceError && /OffscreenCanvas/.test(e.message)) {
        throw new Error(
          "webgpu backend under Node: dataSync()/arraySync() cannot read GPU data (tfjs needs OffscreenCanvas for that); use await tensor.data() or tensor.array()",
          { cause: e },
        );
      }
      throw e;
    }
  };
  proto[PATCHED] = true;
}

const ADDN_PATCHED = Symbol.for("clawrl.webgpu.addNGrouped");

/** AddN in groups of at most (storage-buffer limit − 1) inputs, then AddN of the group sums. */
function groupAddN(): void {
  const k = tf.getKernel("AddN", "webgpu") as (tf.KernelConfig & { [ADDN_PATCHED]?: boolean }) | undefined;
  if (!k || k[ADDN_PATCHED]) return;
  const addN = k.kernelFunc;
  tf.unregisterKernel("AddN", "webgpu");
  const grouped: tf.KernelFunc = (args) => {
    const backend = args.backend as unknown as WebGpuBackendLike;
    const max = Math.max(2, backend.device.limits.maxStorageBuffersPerShaderStage - 1);
    let level = args.inputs as unknown as tf.TensorInfo[];
    const temps: tf.TensorInfo[] = [];
    try {
      while (level.length > max) {
        const next: tf.TensorInfo[] = [];
        for (let i = 0; i < level.length; i += max) {
          const part = level.slice(i, i + max);
          if (part.length === 1) {
            next.push(part[0]);
            continue;
          }
          const sum = addN({ ...args, inputs: part as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
          temps.push(sum);
          next.push(sum);
        }
        level = next;
      }
      return addN({ ...args, inputs: level as unknown as tf.NamedTensorInfoMap });
    } finally {
      for (const t of temps) backend.disposeData(t.dataId);
    }
  };
  tf.registerKernel({ ...k, kernelFunc: grouped, [ADDN_PATCHED]: true } as tf.KernelConfig);
}

/** Reads on this backend fail once the device reported a GPU error, or was lost. */
function failReadsAfterGpuErrors(backend: WebGpuBackendLike, dawn: DawnDevice): void {
  const read = backend.read.bind(backend);
  backend.read = async (dataId: object) => {
    let values: unknown;
    try {
      values = await read(dataId);
    } catch (e) {
      // Dawn rejects the read (an empty AbortError) when the device is gone; its loss is
      // reported a moment later.
      await new Promise((r) => setImmediate(r));
      const lost = dawn.lostReason();
      throw new Error(
        lost ? `webgpu: the GPU device was lost (${lost})` : `webgpu: reading a tensor failed: ${(e instanceof Error && e.message) || String(e)}`,
        { cause: e },
      );
    }
    const err = dawn.firstError();
    if (err) throw new Error(`webgpu: a GPU command failed earlier, so results since may be wrong: ${err}`);
    const lost = dawn.lostReason();
    if (lost) throw new Error(`webgpu: the GPU device was lost (${lost})`);
    return values;
  };
}

type Restore = () => void;

function setNavigatorGpu(gpu: unknown): Restore {
  const g = globalThis as { navigator?: object };
  if (g.navigator === undefined) {
    Object.defineProperty(globalThis, "navigator", { value: { gpu }, configurable: true, writable: true });
    return () => void delete g.navigator;
  }
  const nav = g.navigator as { gpu?: unknown };
  const before = Object.getOwnPropertyDescriptor(nav, "gpu");
  Object.defineProperty(nav, "gpu", { value: gpu, configurable: true, writable: true });
  return () => {
    if (before) Object.defineProperty(nav, "gpu", before);
    else delete nav.gpu;
  };
}

function setGlobals(globals: Record<string, unknown>): Restore {
  const added: string[] = [];
  for (const [k, v] of Object.entries(globals)) {
    if (k in globalThis) continue;
    Object.defineProperty(globalThis, k, { value: v, configurable: true, writable: true });
    added.push(k);
  }
  return () => {
    for (const k of added) delete (globalThis as Record<string, unknown>)[k];
  };
}

interface BufferPool {
  freeBuffers: Map<string, Array<{ size: number; destroy(): void }>>;
  numFreeBuffers: number;
  numBytesAllocated: number;
}

/**
 * tfjs-backend-webgpu keeps every buffer a disposed tensor had, keyed by size, for reuse, and
 * never gives one back: with shapes that change from batch to batch (sequence lengths) the pool
 * grows (64 lengths of a [8T, 512] product left 131 MiB pooled for 1 MiB in use). This frees
 * the pooled buffers (tf.memory().numBytesAllocatedInGPU drops to numBytesInGPU); returns the
 * bytes freed, 0 when the active backend is not webgpu.
 */
export function releaseFreeGpuBuffers(): number {
  if (tf.getBackend() !== "webgpu") return 0;
  const pool = (tf.backend() as unknown as { bufferManager?: BufferPool }).bufferManager;
  if (!pool) return 0;
  let freed = 0;
  for (const list of pool.freeBuffers.values()) {
    for (const b of list) {
      freed += b.size;
      b.destroy();
    }
    list.length = 0; // keys stay: releaseBuffer() does nothing once the map is empty
  }
  pool.numFreeBuffers = 0;
  pool.numBytesAllocated -= freed;
  return freed;
}

export function webGpuDeviceLabel(s: AdapterSummary): string {
  return `webgpu (${s.name}, ${s.software ? "software" : s.backend})`;
}

/**
 * Opens a Dawn device and makes "webgpu" the active tfjs backend on it, or throws an Error
 * whose first line is the reason to skip it (and leaves no trace: no navigator.gpu, no
 * registered "webgpu" backend).
 */
export async function startWebGpu(o: Pick<OpenOptions, "allowSoftware" | "log" | "adapterTimeoutMs" | "deviceTimeoutMs">): Promise<WebGpuStarted> {
  const pkg = "@tensorflow/tfjs-backend-webgpu";
  try {
    require.resolve(pkg);
  } catch {
    throw new Error(`not installed (optional dependency ${pkg})`);
  }
  const dawn: DawnDevice = await openDawn(o);
  const restores: Restore[] = [];
  try {
    restores.push(setGlobals(dawn.globals));
    restores.push(setNavigatorGpu(dawn.gpu));
    const wg = (await import(pkg)) as { WebGPUBackend: WebGpuBackendClass };
    explainSyncReads(wg.WebGPUBackend);
    groupAddN();
    // The package registered a factory that asks navigator.gpu for another adapter: use ours.
    if (tf.findBackendFactory("webgpu")) tf.removeBackend("webgpu");
    tf.registerBackend(
      "webgpu",
      () => {
        const backend = new wg.WebGPUBackend(dawn.device, dawn.adapterInfo);
        failReadsAfterGpuErrors(backend as unknown as WebGpuBackendLike, dawn);
        return backend;
      },
      3,
    );
    restores.push(() => tf.removeBackend("webgpu"));
    tf.env().set("WEBGPU_CPU_FORWARD", false);
    const batch = Number(process.env.CLAWRL_WEBGPU_SUBMIT_BATCH ?? 15);
    if (!Number.isInteger(batch) || batch < 1)
      throw new Error(`CLAWRL_WEBGPU_SUBMIT_BATCH must be a positive integer, not "${process.env.CLAWRL_WEBGPU_SUBMIT_BATCH}"`);
    tf.env().set("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE", batch);
    const ok = await tf.setBackend("webgpu");
    if (!ok || tf.getBackend() !== "webgpu") throw new Error('tfjs could not initialise backend "webgpu"');
    await tf.ready();
    // One real round trip: a device that compiles no shader or never answers is no backend.
    const probe = tf.tidy(() => tf.add(tf.tensor1d([1, 2], "float32"), tf.scalar(1)));
    const read = probe.data();
    let timer: NodeJS.Timeout | undefined;
    const values = await Promise.race([
      read,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("first GPU read did not answer within 10000 ms")), 10_000))),
    ]).finally(() => clearTimeout(timer));
    tf.dispose(probe);
    if (values[0] !== 2 || values[1] !== 3) throw new Error(`first GPU computation is wrong: 1+[1,2] gave [${Array.from(values).join(", ")}]`);
  } catch (e) {
    for (const r of restores.reverse()) {
      try {
        r();
      } catch {
        // best effort: the next candidate must still start
      }
    }
    try {
      dawn.device.destroy();
    } catch {
      // already lost
    }
    throw e;
  }
  return { device: webGpuDeviceLabel(dawn.summary), summary: dawn.summary };
}

/**
 * tfjs-backend-wasm kernels that copy more than they must, registered again to read the heap in
 * place (issue 31; the profile of a 16 × 81 step on the 0.5B shape, bench/trainer-profile.ts):
 *
 * - Slice (and Unpack and SplitV, which call it) reads its whole input with readSync, a copy of
 *   the heap (HEAPU8.slice: ~1 GB/s on the threaded build's shared memory), for every slice it
 *   takes: unstacking attention's [32, 567, 64] queries into 32 copied the whole tensor 32 times,
 *   and Unpack was 6.3% of that step. Here a slice copies only its own elements, from a view.
 * - Identity and same-type Cast copy the data, where tfjs's cpu and webgl backends share it
 *   (incRef). The engine clones every tensor a gradient saves (saveTensorsForBackwardMode →
 *   clone → Identity), so a recorded block copied each one. Tensors are immutable in tfjs
 *   (Variable.assign swaps the data, never writes it), so sharing is safe.
 *
 * Strings, and dtypes the heap has no view for, go to the stock kernels. BackendWasm's
 * typedArrayFromHeap, makeOutput and incRef are not public API (tfjs-backend-wasm 4.22.0):
 * without them the stock kernels run, as they do with ./heap.ts's setHeapViews(false) (the
 * benchmark's baseline, bench/trainer-profile.ts --ab heap-views, and the tests).
 */
import * as tf from "@tensorflow/tfjs-core";
import { heapViews, type BackendWasmHeap } from "./heap.js";

type HeapArray = Float32Array | Int32Array | Uint8Array;

const VIEWABLE = new Set<tf.DataType>(["float32", "int32", "bool"]);

function heapOf(backend: unknown, x: tf.TensorInfo): BackendWasmHeap | null {
  if (!heapViews() || !VIEWABLE.has(x.dtype)) return null;
  const b = backend as Partial<BackendWasmHeap>;
  return typeof b.typedArrayFromHeap === "function" && typeof b.makeOutput === "function" && typeof b.incRef === "function" ? (b as BackendWasmHeap) : null;
}

/**
 * Copies the slice [begin, begin + size) of `src` (row-major, `shape`) into `dst`: the
 * innermost dimensions the slice takes whole, with the one before them, are one contiguous run
 * per index of the outer dimensions.
 */
export function copySlice(src: HeapArray, shape: readonly number[], begin: readonly number[], size: readonly number[], dst: HeapArray): void {
  const rank = shape.length;
  let d = rank - 1;
  let inner = 1;
  while (d >= 0 && size[d] === shape[d]) inner *= shape[d--];
  if (d < 0) {
    dst.set(src.subarray(0, inner));
    return;
  }
  const run = size[d] * inner;
  const strides = new Array<number>(rank);
  for (let i = rank - 1, s = 1; i >= 0; s *= shape[i--]) strides[i] = s;
  const idx = new Array<number>(d).fill(0);
  let outer = 1;
  for (let i = 0; i < d; i++) outer *= size[i];
  for (let n = 0, o = 0; n < outer; n++, o += run) {
    let off = begin[d] * strides[d];
    for (let i = 0; i < d; i++) off += (begin[i] + idx[i]) * strides[i];
    dst.set(src.subarray(off, off + run), o);
    for (let i = d - 1; i >= 0 && ++idx[i] === size[i]; i--) idx[i] = 0;
  }
}

function sliceOf(heap: BackendWasmHeap, x: tf.TensorInfo, begin: number[], size: number[]): tf.TensorInfo {
  const out = heap.makeOutput(size, x.dtype);
  if (size.every((s) => s > 0)) copySlice(heap.typedArrayFromHeap(x), x.shape, begin, size, heap.typedArrayFromHeap(out));
  return out;
}

interface KernelArgs {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}

function slice(args: KernelArgs): tf.TensorInfo | null {
  const x = args.inputs.x as tf.TensorInfo;
  const heap = heapOf(args.backend, x);
  if (!heap) return null;
  const { begin, size } = args.attrs as unknown as { begin: number | number[]; size?: number | number[] };
  const [b, s] = tf.slice_util.parseSliceParams(x, begin, size);
  return sliceOf(heap, x, b, s);
}

function unpack(args: KernelArgs): tf.TensorInfo[] | null {
  const value = args.inputs.value as tf.TensorInfo;
  const heap = heapOf(args.backend, value);
  if (!heap) return null;
  const rank = value.shape.length;
  const axis = ((args.attrs as unknown as { axis: number }).axis + rank) % rank;
  const outShape = value.shape.filter((_, i) => i !== axis);
  const begin = new Array<number>(rank).fill(0);
  const size = value.shape.slice();
  size[axis] = 1;
  return Array.from({ length: value.shape[axis] }, (_, i) => {
    begin[axis] = i;
    return { ...sliceOf(heap, value, begin, size), shape: outShape };
  });
}

function splitV(args: KernelArgs): tf.TensorInfo[] | null {
  const x = args.inputs.x as tf.TensorInfo;
  const heap = heapOf(args.backend, x);
  if (!heap) return null;
  const { numOrSizeSplits, axis } = args.attrs as unknown as { numOrSizeSplits: number | number[]; axis: number | number[] };
  const a = tf.util.parseAxisParam(axis, x.shape)[0];
  const sizes = tf.backend_util.prepareSplitSize(x, numOrSizeSplits, a);
  const begin = new Array<number>(x.shape.length).fill(0);
  return sizes.map((s) => {
    const size = x.shape.slice();
    size[a] = s;
    const out = sliceOf(heap, x, begin, size);
    begin[a] += s;
    return out;
  });
}

/** Identity and same-type Cast: the same data under a new tensor. */
function share(args: KernelArgs): tf.TensorInfo | null {
  const x = args.inputs.x as tf.TensorInfo;
  const to = (args.attrs as { dtype?: tf.DataType } | undefined)?.dtype;
  const heap = heapOf(args.backend, x);
  if (!heap || (to !== undefined && to !== x.dtype)) return null;
  heap.incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
}

const REPLACED: Record<string, (args: KernelArgs) => tf.TensorInfo | tf.TensorInfo[] | null> = {
  Slice: slice,
  Unpack: unpack,
  SplitV: splitV,
  Identity: share,
  Cast: share,
};

let registered = false;
/** Registers the kernels above for wasm, each falling back to the stock one it replaces. Once per process. */
export function registerInPlaceKernels(): void {
  if (registered) return;
  registered = true;
  for (const [name, kernel] of Object.entries(REPLACED)) {
    const stock = tf.getKernel(name, "wasm");
    if (!stock) continue;
    tf.unregisterKernel(name, "wasm");
    tf.registerKernel({
      kernelName: name,
      backendName: "wasm",
      kernelFunc: (args) => kernel(args) ?? stock.kernelFunc(args),
    });
  }
}

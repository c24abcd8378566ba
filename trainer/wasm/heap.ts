/**
 * Tensors of the wasm backend read and written where they live, in its heap, without copies.
 *
 * Why (issue 31, 1 × 128 on the 0.5B shape): the native products (trainer/native/gemm.ts) read
 * their activation with dataSync, which on wasm is a slice of the heap (HEAPU8.slice: ~1 GB/s
 * on the threaded build's shared memory, 2.2 ms for a [128, 4864] activation, 14 ms for the
 * cycle's [1296, 4864]), and return a fresh Float32Array that tf.tensor copies into the heap
 * again. A view of the heap (`typedArrayFromHeap`) costs nothing and the addon reads and writes
 * it in place (shared memory included); an output tensor allocated in the heap first
 * (`makeOutput`) is written by the addon directly.
 *
 * tfjs's own kernels that copied the heap are registered again to read it in place
 * (./inPlaceKernels.ts); one switch turns both off.
 *
 * BackendWasm's typedArrayFromHeap and makeOutput are not public API (tfjs-backend-wasm 4.22.0):
 * `wasmHeap()` checks they are there and returns null otherwise, and callers then copy as
 * before.
 */
import * as tf from "@tensorflow/tfjs-core";

interface TensorInfoLike {
  dataId: object;
  shape: number[];
  dtype: tf.DataType;
}

/** What both modules use of BackendWasm (heap.ts its views, inPlaceKernels.ts also incRef). */
export interface BackendWasmHeap {
  typedArrayFromHeap(t: TensorInfoLike): Float32Array | Int32Array | Uint8Array;
  makeOutput(shape: number[], dtype: tf.DataType): TensorInfoLike;
  incRef(dataId: object): void;
}

let useViews = true;
/**
 * The heap read in place (default: these views and ./inPlaceKernels.ts), or copied as before:
 * for bench/trainer-profile.ts's alternating comparison (--ab heap-views) and the tests.
 */
export function setHeapViews(on: boolean): void {
  useViews = on;
}
export function heapViews(): boolean {
  return useViews;
}

/** The wasm backend when it is the active one and has what the views need, else null. */
function wasmHeap(): BackendWasmHeap | null {
  if (!useViews || tf.getBackend() !== "wasm") return null;
  const b = tf.backend() as unknown as Partial<BackendWasmHeap>;
  return typeof b.typedArrayFromHeap === "function" && typeof b.makeOutput === "function" ? (b as BackendWasmHeap) : null;
}

/** A float32 tensor's values: a view of the wasm heap (read in place; do not keep it past the next op), else dataSync. */
export function readF32(t: tf.Tensor): Float32Array {
  if (t.dtype !== "float32") throw new Error(`readF32: a ${t.dtype} tensor`);
  const heap = wasmHeap();
  return heap ? (heap.typedArrayFromHeap(t) as Float32Array) : (t.dataSync() as Float32Array);
}

/**
 * A new float32 tensor of `shape` whose values `fill` writes (every one of them: the heap's
 * memory is not zeroed). On wasm `fill` writes the tensor's heap memory directly; elsewhere a
 * Float32Array that becomes the tensor. Read inputs with readF32 inside `fill`: a view taken
 * before the allocation may be detached by it (the single-threaded build's heap grows by
 * replacing its buffer).
 */
export function writeF32<R extends tf.Rank>(shape: number[], fill: (out: Float32Array) => void): tf.Tensor<R> {
  return writeF32s([shape], ([out]) => fill(out))[0] as tf.Tensor<R>;
}

/** Several new float32 tensors filled by one call (as writeF32: their views are taken after every allocation). */
export function writeF32s(shapes: number[][], fill: (outs: Float32Array[]) => void): tf.Tensor[] {
  const heap = wasmHeap();
  if (!heap) {
    const outs = shapes.map((s) => new Float32Array(s.reduce((a, d) => a * d, 1)));
    fill(outs);
    return outs.map((o, i) => tf.tensor(o, shapes[i], "float32"));
  }
  const infos = shapes.map((s) => heap.makeOutput(s, "float32"));
  try {
    fill(infos.map((info) => heap.typedArrayFromHeap(info) as Float32Array));
  } catch (e) {
    for (const info of infos) tf.backend().disposeData(info.dataId);
    throw e;
  }
  return infos.map((info) => tf.engine().makeTensorFromTensorInfo(info, tf.backend()));
}

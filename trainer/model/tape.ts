/**
 * A block's forward recorded on tfjs's gradient tape, so that the backward pass can run later
 * (after the head and the loss, across awaits) without running the block again.
 *
 * tfjs keeps a tape only inside tf.grads, which runs its function and the backward at once;
 * a training step needs the loss's gradient (an async read-back away) before it can start the
 * backward. So, for a block whose activations the memory plan lets us keep, the forward is run
 * with the engine's tape switched on (the same two fields engine.gradients sets: `activeTape`
 * and `gradientDepth`, both in the public `EngineState`), and the recorded nodes, which hold
 * the tensors their gradients need (kept clones), are taken off the engine. Later,
 * `replayGrads` calls tf.grads with a function that puts the recorded nodes back on the tape
 * and returns the recorded output: tf.grads filters and back-propagates them exactly as if the
 * block had just run, and frees their saved tensors (as it frees its own tape's).
 *
 * The recorded block must not free tensors its gradients read outside the tape (frozenLinear's
 * weight, read by its gradient): only blocks whose weights stay on the backend are recorded.
 */
import * as tf from "@tensorflow/tfjs-core";

interface TapeNodeLike {
  saved?: tf.Tensor[];
}

interface EngineStateLike {
  activeTape: TapeNodeLike[] | null;
  gradientDepth: number;
}

function engineState(): EngineStateLike {
  const st = (tf.engine() as unknown as { state?: EngineStateLike }).state;
  // activeTape is undefined until the first gradient computation, then an array or null.
  if (!st || typeof st.gradientDepth !== "number" || !(st.activeTape == null || Array.isArray(st.activeTape))) {
    throw new Error("tfjs engine internals differ from 4.22 (state.activeTape / gradientDepth): cannot keep a block's activations");
  }
  return st;
}

/** A block's output and the tape nodes that lead to it (owning their saved tensors). */
export interface RecordedForward<T extends tf.Tensor = tf.Tensor2D> {
  y: T;
  nodes: TapeNodeLike[];
}

/**
 * Runs `f` (inside tf.tidy) with the gradient tape on, returning its output and the recorded
 * nodes. Must not be called while a tape is already recording (inside tf.grads).
 */
export function recordForward<T extends tf.Tensor>(f: () => T): RecordedForward<T> {
  const st = engineState();
  if (st.gradientDepth !== 0) throw new Error("recordForward inside a gradient computation");
  st.activeTape = [];
  st.gradientDepth = 1;
  let y: T;
  try {
    y = tf.tidy(f);
  } catch (e) {
    disposeNodes(st.activeTape ?? []);
    st.activeTape = null;
    throw e;
  } finally {
    st.gradientDepth = 0;
  }
  const nodes = st.activeTape ?? [];
  st.activeTape = null;
  return { y, nodes };
}

/**
 * Gradients of the recorded output w.r.t. `xs` (tensors the recorded forward used) given its
 * gradient `dy`, as tf.grads would give them had it run the forward. Frees the recorded saved
 * tensors; does not free `rec.y` (its data is not needed: only its id and shape).
 */
export function replayGrads(rec: RecordedForward<tf.Tensor>, xs: tf.Tensor[], dy: tf.Tensor): tf.Tensor[] {
  const nodes = rec.nodes;
  rec.nodes = [];
  try {
    return tf.grads(() => {
      const st = engineState();
      st.activeTape!.push(...nodes);
      return rec.y;
    })(xs, dy);
  } catch (e) {
    disposeNodes(nodes);
    throw e;
  }
}

function disposeNodes(nodes: TapeNodeLike[]): void {
  for (const n of nodes) for (const t of n.saved ?? []) if (!t.isDisposed) t.dispose();
}

/** Frees a recording that will not be replayed (an error before the backward). */
export function disposeRecorded(rec: RecordedForward<tf.Tensor>): void {
  disposeNodes(rec.nodes);
  rec.nodes = [];
}

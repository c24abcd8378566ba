import path from "node:path";
import type { Llama, LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import { assertLoadableGguf } from "../../../models/gguf/loadable.js";
import { UnavailableError } from "../domainErrors.js";
import { loadBoundMs, loadWithin } from "./loadBound.js";

/** One input to embed: text, or token ids the client tokenized itself. */
export type EmbeddingInput = string | readonly number[];

export interface EmbeddingBatch {
  /** one L2-normalised vector per input, in input order */
  vectors: Float32Array[];
  /** tokens evaluated, all inputs together (BOS/EOS added by the model's rules included) */
  promptTokens: number;
}

/**
 * Where /v1/embeddings gets its vectors. The seam for a separate embedding GGUF named in the
 * settings: such a source loads its own model and implements this; the route does not change.
 */
export interface EmbeddingSource {
  /** the model id replies name */
  readonly modelId: string;
  embed(inputs: readonly EmbeddingInput[], signal?: AbortSignal): Promise<EmbeddingBatch>;
  close(): Promise<void>;
}

export class EmbeddingInputError extends Error {
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(message);
    this.name = "EmbeddingInputError";
  }
}

export interface ModelEmbedderOptions {
  /** CPU threads for the embedding context; default node-llama-cpp's. */
  threads?: number;
  /** Upper bound on an input's tokens (the embedding context's size); default min(train context, 8192). */
  maxTokens?: number;
}

/**
 * Embeddings from a loaded model through an embedding context of its own (node-llama-cpp
 * `createEmbeddingContext`), created on first use: chat's sequences are never touched, so an
 * embedding request neither waits for nor disturbs a generation's KV cache. One request's
 * inputs run as one job: a second request waits until the whole batch is done (batches are not
 * interleaved). node-llama-cpp 3.22.1 evaluates one sequence per pass (its addon reads the
 * pooled vector of sequence 0 only), so the inputs of a batch go through one after another.
 * Each input is evaluated from an empty sequence, so identical inputs give identical vectors.
 */
export class ModelEmbedder implements EmbeddingSource {
  private context: Promise<LlamaEmbeddingContext> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    readonly model: LlamaModel,
    readonly modelId: string,
    private readonly opts: ModelEmbedderOptions = {},
  ) {}

  get contextSize(): number {
    return Math.min(this.model.trainContextSize, this.opts.maxTokens ?? 8192);
  }

  private contextNow(): Promise<LlamaEmbeddingContext> {
    if (!this.context) {
      const size = this.contextSize;
      // batchSize = context size: a pooled (non-causal) embedding needs the whole input in one batch.
      this.context = this.model.createEmbeddingContext({ contextSize: size, batchSize: size, ...(this.opts.threads ? { threads: this.opts.threads } : {}) });
      this.context.catch(() => (this.context = null)); // a failed creation is retried by the next request
    }
    return this.context;
  }

  /** Token ids as the embedding context will evaluate them, length-checked; the text's own tokens when given text. */
  private tokensOf(input: EmbeddingInput, index: number): Token[] {
    const tokens = typeof input === "string" ? this.model.tokenize(input, false) : (input as Token[]);
    if (tokens.length === 0) throw new EmbeddingInputError(index, `input[${index}] is empty`);
    const vocab = this.model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
    if (typeof input !== "string" && vocab && tokens.some((t) => !Number.isInteger(t) || t < 0 || t >= vocab))
      throw new EmbeddingInputError(index, `input[${index}] holds a token id outside the vocabulary (0 to ${vocab - 1})`);
    // +2: the BOS/EOS the embedding context may add.
    if (tokens.length + 2 >= this.contextSize)
      throw new EmbeddingInputError(index, `input[${index}] has ${tokens.length} tokens; at most ${this.contextSize - 3} fit`);
    return tokens;
  }

  embed(inputs: readonly EmbeddingInput[], signal?: AbortSignal): Promise<EmbeddingBatch> {
    if (this.closed) return Promise.reject(new Error("the embedding model is closed"));
    // Validated before queueing: a bad input fails at once, whatever is running.
    const tokenized = inputs.map((input, i) => this.tokensOf(input, i));
    const job = this.queue.then(async () => {
      const ctx = await this.contextNow();
      const vectors: Float32Array[] = [];
      let promptTokens = 0;
      for (const tokens of tokenized) {
        if (signal?.aborted) throw signal.reason ?? new Error("aborted");
        promptTokens += ctx.calculateInputLength([...tokens]);
        // A copy: node-llama-cpp adds BOS/EOS to the array it is given.
        const e = await ctx.getEmbeddingFor([...tokens]);
        vectors.push(normalised(e.vector));
      }
      return { vectors, promptTokens };
    });
    this.queue = job.catch(() => undefined);
    return job;
  }

  async close(): Promise<void> {
    this.closed = true;
    const ctx = this.context;
    this.context = null;
    await this.queue;
    if (ctx) await (await ctx.catch(() => null))?.dispose();
  }
}

/** v / |v| (OpenAI's vectors have length 1, so a dot product is the cosine). A zero vector stays zero. */
export function normalised(v: readonly number[]): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const n = Math.sqrt(sum);
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = n > 0 ? v[i] / n : 0;
  return out;
}

/** The first `dimensions` components, renormalised to length 1 (how OpenAI's text-embedding-3 shortens a vector). */
export function truncated(v: Float32Array, dimensions: number): Float32Array {
  return dimensions >= v.length ? v : normalised(Array.from(v.subarray(0, dimensions)));
}

/**
 * The embedder of whatever model is served now: one per model, created on first use and
 * closed when that model is disposed (a model switch), so it follows the served model.
 */
export function servedModelEmbeddings(current: () => { model: LlamaModel; modelId: string }, opts: ModelEmbedderOptions = {}): () => EmbeddingSource {
  const byModel = new WeakMap<LlamaModel, ModelEmbedder>();
  return () => {
    const { model, modelId } = current();
    let e = byModel.get(model);
    if (!e) {
      const made = new ModelEmbedder(model, modelId, opts);
      e = made;
      byModel.set(model, made);
      model.onDispose.createListener(() => void made.close());
    }
    return e;
  };
}

/**
 * An embedding GGUF of its own (the settings' `embeddingModelPath`), loaded on the served
 * model's runtime when first asked for and kept until the setting changes or the core closes.
 * Its model and context are its own: chat's model, context and sequences are never touched, so
 * an embedding request neither waits for a generation nor slows its KV cache (they share the
 * CPU's cores, as the judge does).
 */
export class FileEmbedder implements EmbeddingSource {
  private inner: Promise<ModelEmbedder> | null = null;
  private closed = false;

  constructor(
    private readonly llama: Llama,
    readonly modelPath: string,
    readonly modelId: string,
    private readonly opts: ModelEmbedderOptions = {},
  ) {}

  private load(): Promise<ModelEmbedder> {
    this.inner ??= (async () => {
      let model: LlamaModel;
      try {
        // The app's own GGUF reader first (issue 26 F3), then a load bounded in time.
        assertLoadableGguf(this.modelPath);
        model = await loadWithin(
          `the embedding model ${this.modelPath}`,
          loadBoundMs(this.modelPath),
          (loadSignal) => this.llama.loadModel({ modelPath: this.modelPath, loadSignal }),
          (late) => late.dispose(),
        );
      } catch (err) {
        this.inner = null; // the next request tries again (the file may have been fixed)
        throw new UnavailableError(`The embedding model in the settings (${this.modelPath}) cannot be loaded: ${(err as Error).message.split("\n")[0]}`, {
          code: "embedding_model_unavailable",
        });
      }
      if (this.closed) {
        await model.dispose();
        throw new Error("the embedding model is closed");
      }
      return new ModelEmbedder(model, this.modelId, this.opts);
    })();
    return this.inner;
  }

  async embed(inputs: readonly EmbeddingInput[], signal?: AbortSignal): Promise<EmbeddingBatch> {
    if (this.closed) throw new Error("the embedding model is closed");
    return (await this.load()).embed(inputs, signal);
  }

  async close(): Promise<void> {
    this.closed = true;
    const inner = await this.inner?.catch(() => null);
    this.inner = null;
    if (!inner) return;
    await inner.close();
    await inner.model.dispose();
  }
}

export interface SettingsEmbeddingsOptions extends ModelEmbedderOptions {
  /** the served model now (throws the route's 503 when none) */
  served: () => { model: LlamaModel; modelId: string; llama: Llama };
  /** the settings' embedding GGUF, or null for the served model */
  modelPath: () => string | null;
  /** the id replies give a file (an installed model's id; default its file name without .gguf) */
  idOf?: (modelPath: string) => string | null;
}

/**
 * /v1/embeddings' source as the settings say: the embedding GGUF chosen there, else the served
 * model. A changed setting closes the previous file's model (after its requests finish) and
 * loads the new one on the next request.
 */
export function settingsEmbeddings(opts: SettingsEmbeddingsOptions): { source: () => EmbeddingSource; close: () => Promise<void> } {
  const { served, modelPath, idOf, ...embedderOpts } = opts;
  const ofServed = servedModelEmbeddings(served, embedderOpts);
  let file: FileEmbedder | null = null;
  return {
    source: () => {
      const p = modelPath();
      if (!p) {
        if (file) void file.close();
        file = null;
        return ofServed();
      }
      if (file?.modelPath !== p) {
        if (file) void file.close();
        file = new FileEmbedder(served().llama, p, idOf?.(p) ?? path.basename(p).replace(/\.gguf$/i, ""), embedderOpts);
      }
      return file;
    },
    close: async () => {
      await file?.close();
      file = null;
    },
  };
}

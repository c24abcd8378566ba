/**
 * /api/models (models/modelService.ts, server/routes/apiModels.ts): the list, downloads (pull,
 * pause, resume, cancel), import and use; and the `download` and `models` SSE events.
 */

/** Whether a model trains on this machine, and how (models/trainVerdict.ts Trainability). */
export interface TrainabilityView {
  fits: boolean;
  /** tfjs backend the verdict is for */
  backend: string;
  /** longest context a sample keeps (0 when it does not fit) */
  maxContext: number;
  summary: string;
  /** why it cannot train: too large here, or an architecture the trainer lacks (serve only); null when it fits */
  limit: "memory" | "architecture" | null;
  /** where the frozen weights live: all on the backend, or (some) streamed from RAM per block / vocabulary slice; null for a model the trainer cannot read */
  weights: "resident" | "streamed" | null;
  needDeviceBytes: number | null;
  availableDeviceBytes: number | null;
  needHostBytes: number | null;
  availableHostBytes: number | null;
}

export interface DownloadView {
  id: string;
  state: "downloading" | "paused" | "done" | "failed" | "cancelled";
  bytes: number;
  total: number | null;
  /** bytes per second */
  speed: number | null;
  etaSeconds: number | null;
  error: string | null;
}

/** A download cancelled (its partial file removed): all that is left of it. */
export interface CancelledDownloadView {
  id: string;
  state: "cancelled";
}

/** A model in the installed index (models/registry.ts InstalledModel). */
export interface InstalledModelEntry {
  id: string;
  path: string;
  origin: "catalog" | "hf" | "import";
  name: string;
  architecture: string;
  trainable: boolean;
  contextLength: number | null;
  /** llama.cpp's name for the file type (e.g. "Q4_K_M"); absent in older indexes */
  quantization?: string | null;
  sizeBytes: number;
  sha256: string | null;
  addedAt: string;
}

/** A model file: the one served, or one installed (downloaded or imported). */
export interface ModelView {
  id: string;
  name: string;
  path: string;
  sizeBytes: number | null;
  architecture: string | null;
  trainable: boolean | null;
  quantization?: string | null;
  contextSize?: number;
  gpuLayers?: number;
  training: TrainabilityView | null;
}

export interface InstalledModelView extends ModelView {
  origin: "catalog" | "hf" | "import";
  /** bytes a delete frees: the downloaded file's; 0 for an imported file (it stays where it is) */
  diskBytes: number;
  /** an embedding model (for /v1/embeddings): never served for chat, so never in the chat's model picker */
  embedding: boolean;
  /** checkpoints trained on it (its learning line): they stay when it is deleted */
  checkpoints: number;
}

/** An embedding model of the shipped catalog (models/catalog.json `embeddingModels`): /v1/embeddings, never chat or training. */
export interface EmbeddingCatalogModelView {
  id: string;
  name: string;
  architecture: string;
  quantization: string;
  sizeBytes: number;
  /** width of its vectors */
  dimensions: number;
  license: string;
  notes: string;
  installed: boolean;
  download: DownloadView | null;
}

/** Whether a model serves on this machine (models/catalog.ts serveFit: the rule the recommendation applies). */
export interface ServeFitView {
  fits: boolean;
  /** what serving it takes (estimated for a file not in the catalog) */
  needBytes: number;
  /** what the app plans with: 60% of the RAM, plus the GPU's memory */
  availableBytes: number;
  summary: string;
}

/** GET /api/models/search?q=: Hugging Face repositories with GGUF files. */
export interface ModelSearchReply {
  query: string;
  repos: { id: string; downloads: number | null; likes: number | null; updatedAt: string | null }[];
}

/** One GGUF file of a repository (a split model's parts as one entry). */
export interface HubFileView {
  /** the id to pull it with: hf:<owner>/<repo>/<file> */
  id: string;
  file: string;
  /** from the file's name (Q4_K_M, Q8_0, F16, IQ3_XXS …); null when the name does not say */
  quantization: string | null;
  sizeBytes: number;
  /** 1 for a single file */
  parts: number;
  /** why it cannot be downloaded here (split into parts, a vision projector); null when it can */
  refused: string | null;
  serve: ServeFitView;
  /** the trainer's memory plan for it on this machine; null when its header could not be read (headerNote says why) */
  training: TrainabilityView | null;
  installed: boolean;
  download: DownloadView | null;
}

/** GET /api/models/search/files?repo=: a repository's GGUF files with their verdicts for this machine. */
export interface ModelFilesReply {
  repo: string;
  /** the architecture its header names (read from one file of the repository); null when unread */
  architecture: string | null;
  /** why the learning verdicts are missing, when they are */
  headerNote: string | null;
  files: HubFileView[];
}

/** DELETE /api/models/:id: the model removed from the list, the bytes freed, and what became of its checkpoints. */
export interface DeleteModelReply {
  removed: InstalledModelEntry;
  freedBytes: number;
  /** false for an imported file: it stays where it was */
  fileDeleted: boolean;
  /** checkpoints trained on it (they stay, in its learning line) */
  checkpointsKept: number;
}

/** A recommended model of the shipped catalog (models/catalog.json). */
export interface CatalogModelView {
  id: string;
  name: string;
  architecture: string;
  quantization: string;
  sizeBytes: number;
  license: string;
  serveMemoryBytes: number;
  notes: string;
  installed: boolean;
  recommended: boolean;
  download: DownloadView | null;
  training: TrainabilityView | null;
}

export interface ModelsReply {
  /** the model served now (or chosen, when none is served) */
  active: ModelView | null;
  installed: InstalledModelView[];
  catalog: CatalogModelView[];
  /** the catalog's embedding models (for /v1/embeddings) */
  embeddingCatalog: EmbeddingCatalogModelView[];
  /** downloads under way or ended this run (typed nullable as the service builds it; never null in practice) */
  downloads: (DownloadView | null)[];
  recommendation: { id: string; reason: string };
  /** the chosen model is not the one served: it takes effect on the next start */
  restartRequired: boolean;
}

/** POST /api/models/pull (202), POST /api/models/:id/pause and /resume: the download's state now. */
export interface DownloadReply {
  download: DownloadView;
}

/** POST /api/models/:id/cancel */
export interface CancelDownloadReply {
  download: CancelledDownloadView;
}

/** POST /api/models/import: the model file added to the installed ones (served only after `use`). */
export interface ImportModelReply {
  model: InstalledModelEntry;
}

/** POST /api/models/use: the model chosen; restartRequired when the core serves another one until it restarts. */
export interface UseModelReply {
  active: InstalledModelEntry;
  restartRequired: boolean;
}

/** `download` event: a download's progress or end (done, failed, paused, cancelled). (Event payloads are type aliases: a listener may keep them as plain records.) */
export type DownloadEvent = {
  download: DownloadView | CancelledDownloadView;
};

/** A served-model switch's progress (servedModel.ts): draining answers in flight, loading (progress 0 to 1), then ready or failed (with why). */
export type ModelSwitchEvent = {
  change: "switch";
  state: "draining" | "loading" | "ready" | "failed";
  id: string;
  name: string;
  /** while loading: the share of the weights loaded, in steps of at least 5 % */
  progress?: number;
  /** failed: why (the previous model is served again) */
  error?: string;
};

/** `models` event: the installed list or the chosen model changed, or a switch moved on. */
export type ModelsEvent = { change: "installed" | "imported" | "active" | "removed"; id: string } | ModelSwitchEvent;

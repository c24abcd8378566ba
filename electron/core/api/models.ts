/** GET /api/models (models/modelService.ts list) and the `download` SSE event's state. */

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
  /** downloads under way or ended this run (typed nullable as the service builds it; never null in practice) */
  downloads: (DownloadView | null)[];
  recommendation: { id: string; reason: string };
  /** the chosen model is not the one served: it takes effect on the next start */
  restartRequired: boolean;
}

/**
 * Which reply each GET route sends: the typed fetch helpers (the renderer's CoreClient.getJson,
 * Node callers' common/apiClient.ts... see README) infer a reply's type from its path, so a
 * caller never names (or guesses) the type itself.
 */
import type { DoctorStatus } from "./doctor.js";
import type { EvalLatestReply } from "./eval.js";
import type { ModelFilesReply, ModelSearchReply, ModelsReply } from "./models.js";
import type { ModelLoadPath, ModelLoadReply } from "./modelLoad.js";
import type { ModelListReply } from "./openai.js";
import type { PreferencesReply } from "./preferences.js";
import type { SessionExport, SessionReply, SessionSearchReply, SessionsReply, TurnView } from "./sessions.js";
import type { Settings } from "./settings.js";
import type { StatusReply } from "./status.js";
import type { OpenAiToolsReply, ToolsReply } from "./tools.js";
import type { CheckpointsReply, TrainingReply } from "./training.js";

/** GET routes with a fixed path, and their replies. */
export interface ApiGetRoutes {
  "/api/status": StatusReply;
  /** the settings with secrets masked (server/routes/api.ts publicSettings) */
  "/api/settings": Settings;
  "/api/checkpoints": CheckpointsReply;
  "/api/training": TrainingReply<TurnView>;
  "/api/models": ModelsReply;
  "/api/sessions": SessionsReply;
  "/api/preferences": PreferencesReply;
  "/api/eval/latest": EvalLatestReply;
  "/api/doctor": DoctorStatus;
  "/api/tools": ToolsReply;
  "/api/tools/openai": OpenAiToolsReply;
  "/v1/models": ModelListReply;
}

/** GET /api/sessions/:id (the id URI-encoded). */
export type SessionPath = `/api/sessions/${string}`;

/** GET /api/search?q=… (chats whose titles or messages hold the text) and /api/sessions/:id/export?format=json (the md format is text). */
export type SessionSearchPath = `/api/search?${string}`;
export type SessionExportPath = `/api/sessions/${string}/export?format=json`;

/** GET /api/models/search?q=… (Hugging Face repositories) and /api/models/search/files?repo=… (a repository's GGUF files). */
export type ModelSearchPath = `/api/models/search?${string}`;
export type ModelFilesPath = `/api/models/search/files?${string}`;

export type ApiGetPath = keyof ApiGetRoutes | SessionPath | SessionSearchPath | ModelSearchPath | ModelFilesPath | ModelLoadPath;

/** The reply of GET `P`. */
export type ApiGetReply<P extends ApiGetPath> = P extends keyof ApiGetRoutes
  ? ApiGetRoutes[P]
  : P extends SessionSearchPath
    ? SessionSearchReply
    : P extends SessionExportPath
      ? SessionExport
      : P extends ModelLoadPath
        ? ModelLoadReply
        : P extends ModelFilesPath
          ? ModelFilesReply
          : P extends ModelSearchPath
            ? ModelSearchReply
            : SessionReply;

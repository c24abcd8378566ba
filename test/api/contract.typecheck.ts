/**
 * Type-level checks of the core's contract (electron/core/api/), compiled by `npm run typecheck`
 * (not run by the test runner: there is nothing to run). The routes are annotated with the
 * contract's reply types and the event bus is typed with its event map, so a reply or an event
 * that drifts fails to compile where it is built; these pin the core's own types to the
 * contract where they meet it, and show that a renamed field is an error.
 */
import type { CheckpointEntryView, CheckpointsReply, CheckpointView, TrainingStatusView } from "../../electron/core/api/training.js";
import type { CheckpointEntry } from "../../electron/core/training/checkpoints.js";
import type { TrainingLiveStatus } from "../../electron/core/training/supervisor.js";
import type { checkpointView } from "../../electron/core/server/routes/training.js";
import type { Settings as StoredSettings } from "../../electron/core/store/store.js";
import type { Settings } from "../../electron/core/api/settings.js";
import type { EvalSummary } from "../../electron/core/api/eval.js";
import type { summarize } from "../../electron/core/eval/latest.js";
import type { FeedbackView, SessionView, TurnView } from "../../electron/core/api/sessions.js";
import type { FeedbackState, TurnView as StoredTurnView } from "../../electron/core/store/store.js";
import type { SessionMeta } from "../../electron/core/store/state.js";
import type { CancelledDownloadView, DownloadView, InstalledModelEntry, ModelsReply, ModelSwitchEvent, UseModelReply } from "../../electron/core/api/models.js";
import type { DownloadState, ModelService } from "../../electron/core/models/modelService.js";
import type { InstalledModel } from "../../models/registry.js";
import type { ModelSwitchState } from "../../electron/core/servedModel.js";
import type { CoreEvents } from "../../electron/core/api/events.js";
import type { PreferenceEvent, PreferenceService } from "../../electron/core/preferences/service.js";
import type { CheckResult } from "../../electron/core/preferences/retire.js";
import type { Preference } from "../../electron/core/api/preferenceSchema.js";
import type { PreferenceReply, PreferenceCheckResultView } from "../../electron/core/api/preferences.js";
import type { OpenAiToolsReply, ToolCallReply, ToolsReply } from "../../electron/core/api/tools.js";
import type { ToolHost } from "../../electron/core/tools/host.js";
import type { TrainabilityView } from "../../electron/core/api/models.js";
import type { Trainability } from "../../models/trainVerdict.js";
import type { ChatGeneration } from "../../electron/core/api/generationLimits.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
type Assignable<From, To> = [From] extends [To] ? true : false;

export type ContractChecks = [
  // One trainability verdict: the one models/ makes is the one /api/models sends and the UI shows.
  Expect<Equal<Trainability, TrainabilityView>>,
  // The chat defaults' schema is the contract's chat generation settings.
  Expect<Equal<Settings["chatDefaults"], ChatGeneration>>,
  // The supervisor's live status is what the contract says the UI reads.
  Expect<Assignable<TrainingLiveStatus, TrainingStatusView>>,
  Expect<Equal<ReturnType<typeof checkpointView>, CheckpointView>>,
  Expect<Equal<ReturnType<typeof summarize>, EvalSummary>>,
  // The store's records as the sessions routes and events send them.
  Expect<Assignable<SessionMeta, SessionView>>,
  Expect<Assignable<FeedbackState, FeedbackView>>,
  Expect<Assignable<StoredTurnView, TurnView>>,
  Expect<Assignable<Awaited<ReturnType<ModelService["list"]>>, ModelsReply>>,
  Expect<Assignable<PreferenceEvent, CoreEvents["preferences"]>>,
  // /api/models: the service's downloads and installed models are the replies' and events' shapes.
  Expect<Assignable<DownloadState, DownloadView>>,
  Expect<Assignable<ReturnType<ModelService["cancel"]>, CancelledDownloadView>>,
  Expect<Equal<InstalledModel, InstalledModelEntry>>,
  Expect<Assignable<Awaited<ReturnType<ModelService["use"]>>, UseModelReply>>,
  Expect<Assignable<ModelSwitchState["state"], ModelSwitchEvent["state"]>>,
  // The stored checkpoint is the `checkpoint` event's.
  Expect<Assignable<CheckpointEntry, CheckpointEntryView>>,
  Expect<Equal<CoreEvents["checkpoint"]["checkpoint"], CheckpointEntryView>>,
  // /api/preferences: the stored preference and the retirement check's results.
  Expect<Assignable<Preference, PreferenceReply["preference"]>>,
  Expect<Assignable<ReturnType<PreferenceService["restore"]>, PreferenceReply["preference"]>>,
  Expect<Assignable<CheckResult, PreferenceCheckResultView>>,
  // /api/tools: the MCP host's views are the replies.
  Expect<Equal<ReturnType<ToolHost["view"]>, ToolsReply>>,
  Expect<Equal<ReturnType<ToolHost["openAiTools"]>, OpenAiToolsReply>>,
  Expect<Equal<Awaited<ReturnType<ToolHost["call"]>>, ToolCallReply>>,
  // One settings schema.
  Expect<Equal<Settings, StoredSettings>>,
];

// A reply whose field was renamed is not the contract's reply: the compiler says so.
// @ts-expect-error `items` is not a field of CheckpointsReply (it is `checkpoints`)
export const drifted: CheckpointsReply = { items: [], active: null };

// Event payloads are typed too: a renamed field, or a state the UI does not know, is an error.
// @ts-expect-error `progress` is not a field of the `download` event (it is `download`)
export const driftedDownload: CoreEvents["download"] = { progress: { id: "m", state: "cancelled" } };
// @ts-expect-error "unloading" is not a switch state
export const driftedSwitch: CoreEvents["models"] = { change: "switch", state: "unloading", id: "m", name: "m" };
// @ts-expect-error `queue` is not a field of the `status` event (it is `judgeQueue`)
export const driftedStatus: CoreEvents["status"] = { queue: 2 };
// @ts-expect-error a preference reply holds `preference`, not `item`
export const driftedPreference: PreferenceReply = { item: null };

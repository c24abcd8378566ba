/**
 * Type-level checks of the core's contract (electron/core/api/), compiled by `npm run typecheck`
 * (not run by the test runner: there is nothing to run). The routes are annotated with the
 * contract's reply types and the event bus is typed with its event map, so a reply or an event
 * that drifts fails to compile where it is built; these pin the core's own types to the
 * contract where they meet it, and show that a renamed field is an error.
 */
import type { CheckpointsReply, CheckpointView, TrainingStatusView } from "../../electron/core/api/training.js";
import type { TrainingLiveStatus } from "../../electron/core/training/supervisor.js";
import type { checkpointView } from "../../electron/core/server/routes/training.js";
import type { Settings as StoredSettings } from "../../electron/core/store/settings.js";
import type { Settings } from "../../electron/core/api/settings.js";
import type { EvalSummary } from "../../electron/core/api/eval.js";
import type { summarize } from "../../electron/core/eval/latest.js";
import type { FeedbackView, SessionView, TurnView } from "../../electron/core/api/sessions.js";
import type { FeedbackState, TurnView as StoredTurnView } from "../../electron/core/store/store.js";
import type { SessionMeta } from "../../electron/core/store/state.js";
import type { ModelsReply } from "../../electron/core/api/models.js";
import type { ModelService } from "../../electron/core/models/modelService.js";
import type { CoreEvents } from "../../electron/core/api/events.js";
import type { PreferenceEvent } from "../../electron/core/preferences/service.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
type Assignable<From, To> = [From] extends [To] ? true : false;

export type ContractChecks = [
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
  // One settings schema.
  Expect<Equal<Settings, StoredSettings>>,
];

// A reply whose field was renamed is not the contract's reply: the compiler says so.
// @ts-expect-error `items` is not a field of CheckpointsReply (it is `checkpoints`)
export const drifted: CheckpointsReply = { items: [], active: null };

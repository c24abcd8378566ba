/**
 * Type-level checks of the core's contract (electron/core/api/), compiled by `npm run typecheck`
 * (not run by the test runner: there is nothing to run). The routes are annotated with the
 * contract's reply types, so a reply that drifts fails to compile where it is built; these pin
 * the core's internal types to the contract where they meet it.
 */
import type { CoreEvents } from "../../electron/core/rollout/events.js";
import type { CoreEventName } from "../../electron/core/api/events.js";
import type { CheckpointsReply, CheckpointView, TrainingStatusView } from "../../electron/core/api/training.js";
import type { TrainingLiveStatus } from "../../electron/core/training/supervisor.js";
import type { checkpointView } from "../../electron/core/server/routes/training.js";
import type { Settings as StoredSettings } from "../../electron/core/store/settings.js";
import type { Settings } from "../../electron/core/api/settings.js";
import type { EvalSummary } from "../../electron/core/api/eval.js";
import type { summarize } from "../../electron/core/eval/latest.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
type Assignable<From, To> = [From] extends [To] ? true : false;

export type ContractChecks = [
  // Every event the bus carries is a contract event, and the contract names no other (the UI listens for these only).
  Expect<Equal<keyof CoreEvents, CoreEventName>>,
  // The supervisor's live status is what the contract says the UI reads.
  Expect<Assignable<TrainingLiveStatus, TrainingStatusView>>,
  Expect<Equal<ReturnType<typeof checkpointView>, CheckpointView>>,
  Expect<Equal<ReturnType<typeof summarize>, EvalSummary>>,
  // One settings schema.
  Expect<Equal<Settings, StoredSettings>>,
];

// A reply whose field was renamed is not the contract's reply: the compiler says so.
// @ts-expect-error `items` is not a field of CheckpointsReply (it is `checkpoints`)
export const drifted: CheckpointsReply = { items: [], active: null };

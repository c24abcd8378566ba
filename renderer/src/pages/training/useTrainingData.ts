import { ApiError } from "../../api/client.js";
import { useCore, useLive } from "../../api/core.js";
import { metricSeries } from "../../format/metrics.js";
import type { PreferencesReply } from "../../../../electron/core/api/preferences.js";

/** What the Training page shows, kept live: the learner's state, the metric series, the judged turns and which hints are preferences already. */
export function useTrainingData() {
  const { status } = useCore();
  // GET /api/training: the learner's detail (history, judged turns) when the core offers it; /api/status otherwise.
  // No model served yet (503 no_model): the status says what there is to say.
  const detail = useLive(
    (c) =>
      c.getJson("/api/training").catch((e: unknown) => {
        if (e instanceof ApiError && (e.notAvailable || e.code === "no_model")) return null;
        throw e;
      }),
    ["training", "judge", "checkpoint", "revert", "models"],
  );
  const checkpoints = useLive((c) => c.getJson("/api/checkpoints"), ["checkpoint", "training"]);
  // Which judged turns' hints are preferences already (a judge's hint can be kept from its row).
  const prefs = useLive((c) => c.get<PreferencesReply>("/api/preferences").catch(() => null), ["preferences"]);
  const keptFrom = new Set((prefs.data?.preferences ?? []).flatMap((p) => p.turnIds));

  const training = detail.data?.training ?? status?.training ?? null;
  const series = metricSeries(checkpoints.data?.checkpoints ?? [], detail.data?.history);
  const judged = detail.data?.recentJudged ?? [];
  return { detail, checkpoints, prefs, keptFrom, training, series, judged };
}

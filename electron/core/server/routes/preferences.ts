import type { FastifyInstance } from "fastify";
import { ApiError, parseBody } from "../errors.js";
import type { Settings } from "../../api/settings.js";
import { blockLine } from "../../preferences/block.js";
import type { PreferenceCheckReply, PreferenceCheckResultView, PreferenceReply, PreferencesReply, PreferenceView } from "../../api/preferences.js";
import type { Preference } from "../../api/preferenceSchema.js";
import { CreatePreferenceBody, PatchPreferenceBody } from "../../preferences/schema.js";
import type { PreferenceService } from "../../preferences/service.js";

export interface PreferenceRouteDeps {
  prefs: PreferenceService;
  settings: () => Settings;
  /** the served model's token counter; null when no model is loaded (costs are then unknown) */
  countTokens: () => ((text: string) => number) | null;
  /** runs a retirement check now (retire.ts); absent when no model is served */
  check?: () => Promise<PreferenceCheckResultView[]>;
}

/**
 * GET/POST /api/preferences (`{text}`, optionally `turnId`: a judge's hint for that turn accepted), PATCH/DELETE /api/preferences/:id, and undo: POST
 * /api/preferences/:id/undo (the latest text or status change), POST /api/preferences/:id/restore
 * (a deleted one), POST /api/preferences/check (retirement check now). Changes go out as SSE
 * `preferences` events (the service emits them). The service's errors (an unknown preference or
 * turn: 404, nothing to undo: 400) are answered by the server's one mapping (server/errors.ts).
 */
export function registerPreferenceRoutes(app: FastifyInstance, deps: PreferenceRouteDeps): void {
  const { prefs } = deps;

  const view = (): PreferencesReply => {
    const count = deps.countTokens();
    const s = deps.settings();
    const plan = count ? prefs.plan(s.preferenceTokenBudget, count) : null;
    const shown = (p: Preference): PreferenceView => ({
      ...p,
      /** prompt tokens this preference costs while active (its line in the block) */
      contextTokens: count ? count(blockLine(p)) + 1 : null,
      inPrompt: plan ? plan.ids.includes(p.id) : null,
      overBudget: plan ? plan.overBudget.includes(p.id) : false,
    });
    return {
      preferences: prefs.list().map(shown),
      deleted: prefs.trash().map(shown),
      /** what main turns get now */
      block: {
        enabled: s.preferencesInPrompt,
        outsideClients: s.preferencesForOutsideClients,
        budget: s.preferenceTokenBudget,
        text: plan?.text ?? "",
        tokens: plan?.tokens ?? null,
        ids: plan?.ids ?? [],
      },
      fromJudge: s.preferencesFromJudge,
    };
  };

  app.get("/api/preferences", async (): Promise<PreferencesReply> => view());

  app.post("/api/preferences", async (req, reply) => {
    const body = parseBody(CreatePreferenceBody, req.body);
    const preference = body.turnId ? prefs.createFromTurn(body.text, body.turnId) : prefs.create(body.text, "manual");
    return reply.status(201).send({ preference } satisfies PreferenceReply);
  });

  app.patch<{ Params: { id: string } }>("/api/preferences/:id", async (req): Promise<PreferenceReply> => {
    const body = parseBody(PatchPreferenceBody, req.body);
    return { preference: prefs.patch(req.params.id, body) };
  });

  app.delete<{ Params: { id: string } }>("/api/preferences/:id", async (req, reply) => {
    prefs.remove(req.params.id);
    return reply.status(204).send();
  });

  app.post<{ Params: { id: string } }>("/api/preferences/:id/undo", async (req): Promise<PreferenceReply> => ({ preference: prefs.undo(req.params.id) }));
  app.post<{ Params: { id: string } }>("/api/preferences/:id/restore", async (req): Promise<PreferenceReply> => ({ preference: prefs.restore(req.params.id) }));

  app.post("/api/preferences/check", async (): Promise<PreferenceCheckReply> => {
    if (!deps.check) throw new ApiError(503, "No model is served: nothing to check preferences against.", "server_error", null, "no_model");
    return { results: await deps.check(), ...view() };
  });
}

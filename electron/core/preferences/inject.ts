import type { Token } from "node-llama-cpp";
import type { PreferenceBlockView } from "../api/sessions.js";
import { ContextLengthError, type Engine, type GenerateRequest } from "../inference/engine.js";
import type { TurnType } from "../store/records.js";
import type { Settings } from "../api/settings.js";
import type { PlannedBlock } from "../rollout/rollout.js";
import { plainPrefix, withBlock } from "./block.js";
import type { PreferenceService } from "./service.js";

/** What a turn records about the preference block it was served with (the contract's PreferenceBlockView). */
export type TurnPreferences = PreferenceBlockView;

/**
 * Decides the block a request gets: main turns only, the app's chat always and outside clients
 * unless the setting says no; null when preferences are off or none is active.
 */
export function blockForTurn(
  settings: Pick<Settings, "preferencesInPrompt" | "preferencesForOutsideClients" | "preferenceTokenBudget">,
  prefs: PreferenceService,
  turn: { turnType: TurnType; fromUi: boolean },
  countTokens: (text: string) => number,
): PlannedBlock | null {
  if (!settings.preferencesInPrompt || turn.turnType !== "main") return null;
  if (!turn.fromUi && !settings.preferencesForOutsideClients) return null;
  const plan = prefs.plan(settings.preferenceTokenBudget, countTokens);
  return plan.ids.length > 0 ? plan : null;
}

const counts = new WeakMap<object, Map<string, number>>();

/** Counts tokens with the served model's tokenizer, remembering recent texts per model (the same lines come with every request). */
export function tokenCounter(engine: Pick<Engine, "model">): (text: string) => number {
  const model = engine.model;
  let seen = counts.get(model);
  if (!seen) {
    seen = new Map<string, number>();
    counts.set(model, seen);
  }
  const cache = seen;
  return (text) => {
    let n = cache.get(text);
    if (n === undefined) {
      n = model.tokenize(text, false).length;
      if (cache.size > 256) cache.clear();
      cache.set(text, n);
    }
    return n;
  };
}

/**
 * The chat prompt to serve: with the block in the system prompt, and the client's own prompt's
 * tokens (what the student sees in context distillation). A block that would not fit the
 * context is left out: the client's prompt is served as sent.
 */
export function prepareChatPrompt(
  engine: Pick<Engine, "renderPrompt">,
  req: GenerateRequest,
  block: PlannedBlock | null,
): { served: GenerateRequest; prepared: { tokens: Token[]; stopTriggers: string[] }; preferences?: TurnPreferences; clientPromptTokens?: number[] } {
  if (block) {
    const served = { ...req, messages: withBlock(req.messages, block.text) };
    try {
      const prepared = engine.renderPrompt(served);
      const client = engine.renderPrompt(req);
      return {
        served,
        prepared,
        preferences: { ids: block.ids, block: block.text, tokens: block.tokens, placement: "system" },
        clientPromptTokens: [...client.tokens],
      };
    } catch (err) {
      if (!(err instanceof ContextLengthError)) throw err;
    }
  }
  return { served: req, prepared: engine.renderPrompt(req) };
}

/** A plain-text prompt's tokens with the block as a paragraph before the text (after BOS), as the OPD teacher reads a hint. */
export function preparePlainPrompt(
  engine: Pick<Engine, "model">,
  tokens: Token[],
  textStart: number,
  block: PlannedBlock | null,
  contextSize: number,
): { tokens: Token[]; preferences?: TurnPreferences; clientPromptTokens?: number[] } {
  if (!block) return { tokens };
  const lead = engine.model.tokenize(plainPrefix(block.text), false);
  const served = [...tokens.slice(0, textStart), ...lead, ...tokens.slice(textStart)];
  if (served.length >= contextSize) return { tokens };
  return { tokens: served, preferences: { ids: block.ids, block: block.text, tokens: lead.length, placement: "prefix" }, clientPromptTokens: [...tokens] };
}

import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { badRequest, notFound, parseBody } from "../errors.js";
import type { Store } from "../../store/store.js";
import type { EventBus } from "../../rollout/events.js";
import type { AnswerEditReply } from "../../api/sessions.js";
import { answerEditNextState } from "../../../../models/samples/answerEdit.js";

const AnswerEditBody = z.object({ text: z.string().max(200_000) }).strict();

/**
 * POST /api/turns/:id/answer-edit {text}: the user's rewrite of an assistant answer ("this is what
 * you should have said"). Kept beside the original (an answer_edit line; the latest is in force) and
 * a training signal (docs/method.md "Answer edits"): the edit is a sample of its own, the edit's tokens
 * the target; the original answer, when nothing followed it yet, gets the correction as its next
 * state (the judge reads it). Only a main turn's answer can be edited.
 */
export function registerAnswerEditRoute(app: FastifyInstance, deps: { store: Store; bus: EventBus }): void {
  const { store, bus } = deps;
  app.post<{ Params: { id: string } }>("/api/turns/:id/answer-edit", async (req): Promise<AnswerEditReply> => {
    const body = parseBody(AnswerEditBody, req.body);
    const entry = store.turnEntry(req.params.id);
    if (!entry) throw notFound(`unknown turn '${req.params.id}'`);
    if (entry.type !== "main") throw badRequest("only an assistant answer of a main turn can be edited (this is a side turn)", null, "side_turn");
    const text = body.text.replace(/\s+$/u, "");
    if (text.trim() === "") throw badRequest("Invalid 'text': the edited answer is empty", "text", "invalid_value");
    if (text === store.readTurn(entry.turnId).text.replace(/\s+$/u, "")) {
      throw badRequest("Invalid 'text': the edit is the answer as it was", "text", "unchanged");
    }
    const answerEdit = store.appendAnswerEdit(entry.turnId, text);
    // The original answer gets the correction as its next state, unless something followed it already (the first pairing wins).
    const nextState = entry.nextState === null;
    if (nextState) store.appendNextState({ turnId: entry.turnId, sessionId: entry.sessionId, fromTurnId: entry.turnId, messages: answerEditNextState(text) });
    bus.emit("answerEdit", { turnId: entry.turnId, sessionId: entry.sessionId, answerEdit });
    if (nextState) bus.emit("turnReady", { turnId: entry.turnId, sessionId: entry.sessionId });
    return { turnId: entry.turnId, sessionId: entry.sessionId, answerEdit, nextState };
  });
}

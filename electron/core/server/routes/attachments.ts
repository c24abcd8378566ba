import type { FastifyInstance } from "fastify";
import type { AttachmentReply, AttachmentUploadReply } from "../../api/attachments.js";
import { ATTACHMENT_BODY_LIMIT, AttachmentUploadBody, attachFile, viewOf } from "../../attachments/service.js";
import type { AttachmentStore } from "../../attachments/store.js";
import { notFound, parseBody } from "../errors.js";

export interface AttachmentRouteDeps {
  store: AttachmentStore;
  /** the served model's context (tokens); null when none is loaded */
  contextSize: () => number | null;
}

/**
 * POST /api/attachments: a file (base64) stored with its chat, answered with its view and its text
 * cut to `maxChars` (api/attachments.ts). Its body limit is its own (the base64 of a 20 MiB file),
 * above the server's, which is sized for prompts. A refused file is answered by the server's one
 * mapping (server/errors.ts): 413 too large, 415 an image or binary, 422 unreadable.
 * GET /api/attachments/:id: the stored view. DELETE /api/attachments/:id: a file removed before it was sent.
 */
export function registerAttachmentRoutes(app: FastifyInstance, deps: AttachmentRouteDeps): void {
  app.post("/api/attachments", { bodyLimit: ATTACHMENT_BODY_LIMIT }, async (req, reply) => {
    const body = parseBody(AttachmentUploadBody, req.body);
    const r = await attachFile(body, { store: deps.store, contextSize: deps.contextSize });
    return reply.status(201).send(r satisfies AttachmentUploadReply);
  });

  app.get<{ Params: { id: string } }>("/api/attachments/:id", async (req): Promise<AttachmentReply> => {
    const a = deps.store.get(req.params.id);
    if (!a) throw notFound(`No attachment ${req.params.id}.`);
    return { attachment: viewOf(a) };
  });

  app.delete<{ Params: { id: string } }>("/api/attachments/:id", async (req, reply) => {
    if (!deps.store.remove(req.params.id)) throw notFound(`No attachment ${req.params.id}.`);
    return reply.status(204).send();
  });
}

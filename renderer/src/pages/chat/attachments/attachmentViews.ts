import { useEffect, useState } from "react";
import { useCore } from "../../../api/core.js";
import type { AttachmentReply } from "../../../../../electron/core/api/attachments.js";
import type { AttachmentView } from "../../../../../electron/core/api/sessions.js";

/** Attachments' views by id: the ones uploaded here, and the ones a recorded message named (GET /api/attachments/:id). */
const known = new Map<string, AttachmentView | null>();

export function rememberAttachment(v: AttachmentView): void {
  known.set(v.id, v);
}

/** The stored view of attachment `id` (null while loading, or when it is no longer stored). */
export function useAttachmentView(id: string): AttachmentView | null {
  const { client } = useCore();
  const [view, setView] = useState<AttachmentView | null>(() => known.get(id) ?? null);
  useEffect(() => {
    if (known.has(id)) return;
    let live = true;
    client
      .get<AttachmentReply>(`/api/attachments/${encodeURIComponent(id)}`)
      .then((r) => {
        known.set(id, r.attachment);
        if (live) setView(r.attachment);
      })
      .catch(() => known.set(id, null));
    return () => {
      live = false;
    };
  }, [client, id]);
  return known.get(id) ?? (view?.id === id ? view : null);
}

import { useCallback, useEffect, useRef, useState, type ClipboardEvent } from "react";
import { useCore } from "../../../api/core.js";
import { messageOf } from "../../../api/client.js";
import { attachmentBlock, type AttachmentUploadReply, type AttachmentUploadRequest } from "../../../../../electron/core/api/attachments.js";
import type { AttachmentView } from "../../../../../electron/core/api/sessions.js";
import { rememberAttachment } from "./attachmentViews.js";
import { attachmentCharBudget } from "./messageBlocks.js";
import { useFileDrop } from "./useFileDrop.js";

/** Largest file the core takes (electron/core/attachments/service.ts MAX_ATTACHMENT_BYTES): larger ones are refused here, before the upload. */
export const MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;
/** A file above the composer: uploading, ready to go with the message, or refused with the reason. */
export interface PendingAttachment {
  key: string;
  name: string;
  size: number;
  state: "uploading" | "ready" | "refused";
  view?: AttachmentView;
  /** the text that goes into the message (cut to fit) */
  text?: string;
  error?: string;
}

function base64Of(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

let seq = 0;

export interface Attachments {
  items: PendingAttachment[];
  /** a file is being uploaded: Send waits */
  uploading: boolean;
  /** files ready to go with the message */
  ready: number;
  /** files dragged over the window */
  dragging: boolean;
  add: (files: Iterable<File>) => void;
  remove: (key: string) => void;
  /** the message as sent: what was typed, then one block per ready file (api/attachments.ts) */
  compose: (typed: string) => string;
  /** after sending: the chips go (the files stay stored with the chat) */
  clear: () => void;
  onPaste: (e: ClipboardEvent) => void;
}

/**
 * The files attached to the message being written: each uploaded as it is added (POST
 * /api/attachments, which reads its text and stores it), cut to the share of the context that
 * is left; dropped anywhere on the window, pasted, or picked with the button.
 */
export function useAttachments(): Attachments {
  const { client, status } = useCore();
  const [items, setItems] = useState<PendingAttachment[]>([]);
  const itemsRef = useRef(items);
  useEffect(() => {
    itemsRef.current = items;
  }, [items]);
  const contextSize = status?.model?.contextSize ?? null;

  const patch = useCallback((key: string, p: Partial<PendingAttachment>) => setItems((xs) => xs.map((x) => (x.key === key ? { ...x, ...p } : x))), []);

  const upload = useCallback(
    /** `share`: the files added together, which split what is left of the budget */
    async (file: File, key: string, share: number) => {
      if (file.size > MAX_ATTACHMENT_BYTES) {
        const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
        patch(key, { state: "refused", error: `${file.name} is ${mib(file.size)}; files up to ${mib(MAX_ATTACHMENT_BYTES)} can be attached.` });
        return;
      }
      try {
        const budget = attachmentCharBudget(contextSize);
        const used = itemsRef.current.reduce((n, x) => n + (x.state === "ready" && x.view ? x.view.keptChars : 0), 0);
        const body: AttachmentUploadRequest = {
          name: file.name || "pasted.txt",
          ...(file.type ? { mediaType: file.type } : {}),
          dataBase64: base64Of(await file.arrayBuffer()),
          sessionId: null,
          ...(budget !== undefined ? { maxChars: Math.max(200, Math.floor((budget - used) / share)) } : {}),
        };
        const r = await client.post<AttachmentUploadReply>("/api/attachments", body);
        rememberAttachment(r.attachment);
        patch(key, { state: "ready", view: r.attachment, text: r.text, name: r.attachment.name });
      } catch (e) {
        patch(key, { state: "refused", error: messageOf(e) });
      }
    },
    [client, contextSize, patch],
  );

  const add = useCallback(
    (files: Iterable<File>) => {
      const batch = [...files];
      for (const file of batch) {
        const key = `f${++seq}`;
        setItems((xs) => [...xs, { key, name: file.name || "pasted.txt", size: file.size, state: "uploading" }]);
        void upload(file, key, batch.length);
      }
    },
    [upload],
  );

  const remove = useCallback(
    (key: string) => {
      const it = itemsRef.current.find((x) => x.key === key);
      setItems((xs) => xs.filter((x) => x.key !== key));
      // Not sent: the stored copy goes too.
      if (it?.view) void client.del(`/api/attachments/${it.view.id}`).catch(() => undefined);
    },
    [client],
  );

  const compose = useCallback((typed: string) => {
    const blocks = itemsRef.current.filter((x) => x.state === "ready" && x.view && x.text !== undefined).map((x) => attachmentBlock(x.view!, x.text!));
    return [typed.trim(), ...blocks].filter(Boolean).join("\n\n");
  }, []);

  const clear = useCallback(() => setItems([]), []);

  const onPaste = useCallback(
    (e: ClipboardEvent) => {
      const files = [...e.clipboardData.files];
      if (files.length === 0) return;
      e.preventDefault();
      add(files);
    },
    [add],
  );

  const dragging = useFileDrop(add);

  return {
    items,
    uploading: items.some((x) => x.state === "uploading"),
    ready: items.filter((x) => x.state === "ready").length,
    dragging,
    add,
    remove,
    compose,
    clear,
    onPaste,
  };
}

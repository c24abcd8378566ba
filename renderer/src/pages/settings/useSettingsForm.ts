import { useEffect, useRef, useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import { useCore, useLive } from "../../api/core.js";
import type { Settings } from "../../../../electron/core/api/settings.js";
import { readChatDefaults, type GenerationSettings } from "../../api/generation.js";
import { engineName } from "../../components/terms.js";
import { useUnsavedChanges } from "../../components/unsavedChanges.js";

/** The settings the form edits (the core's schema: electron/core/api/settings.ts); the others are left alone. */
const EDITED = [
  "learningMethod",
  "batchSize",
  "learningRate",
  "loraRank",
  "teacherSource",
  "judgeVotes",
  "judgeSource",
  "autoLearn",
  "outsideDefaultTurnType",
  "headerlessTurnsMain",
  "klBeta",
  "heldBackShare",
  "embeddingModelPath",
] as const satisfies readonly (keyof Settings)[];

/** What the Settings form edits: the learning settings and the chat defaults, saved together. */
export type Draft = Pick<Settings, (typeof EDITED)[number]> & { chatDefaults: GenerationSettings };

/**
 * The fields the form edits of GET /api/settings's reply (the core sends them all, with the
 * defaults of its schema: the form waits for this reply instead of showing values of its own).
 */
function draftOf(s: Settings): Draft {
  return { ...(Object.fromEntries(EDITED.map((k) => [k, s[k]])) as Pick<Settings, (typeof EDITED)[number]>), chatDefaults: readChatDefaults(s) };
}

/** Sets one field of the draft. */
export type SetField = <K extends keyof Draft>(k: K, v: Draft[K]) => void;

/** The fields of `draft` that differ from `base`: what one PATCH /api/settings sends. */
function changes(draft: Draft | null, base: Draft | null): Partial<Draft> {
  if (!draft || !base) return {};
  return Object.fromEntries(Object.entries(draft).filter(([k, v]) => JSON.stringify(base[k as keyof Draft]) !== JSON.stringify(v)));
}

/** The Settings form's state: loads GET /api/settings, tracks the edits, saves the changed fields with one PATCH. */
export function useSettingsForm() {
  const { client } = useCore();
  // One GET for the learning settings and the chat defaults: the page saves them together.
  const loaded = useLive((c) => c.getJson("/api/settings").then(draftOf), ["settings"]);
  // null until GET /api/settings answers: the defaults are the core's (its settings schema), not the page's.
  const [form, setForm] = useState<Draft | null>(null);
  // What the core holds as far as this page knows: the last load, or what the last save sent.
  const [base, setBase] = useState<Draft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const changed = changes(form, base);
  const dirty = Object.keys(changed).length > 0;
  const dirtyRef = useRef(dirty);
  // Kept current before the load effect below reads it (effects run in order).
  useEffect(() => {
    dirtyRef.current = dirty;
  }, [dirty]);
  useUnsavedChanges(dirty);

  // A fresh load replaces the form unless the user is editing it (then it waits for Save or Discard).
  const loadedJson = loaded.data ? JSON.stringify(loaded.data) : null;
  useEffect(() => {
    if (!loaded.data || dirtyRef.current) return;
    setForm(loaded.data);
    setBase(loaded.data);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- by value
  }, [loadedJson]);

  const set: SetField = (k, v) => {
    setForm((f) => (f ? { ...f, [k]: v } : f));
    setSaved(false);
  };

  const save = async () => {
    if (!form || !dirty || saving) return;
    setSaving(true);
    setError(null);
    try {
      await client.patch("/api/settings", changed);
      setBase(form);
      setSaved(true);
      loaded.reload();
    } catch (e) {
      setError(e instanceof ApiError && e.notAvailable ? `Saving settings is not offered by ${engineName}.` : `Could not save the settings: ${messageOf(e)}`);
    } finally {
      setSaving(false);
    }
  };

  const unavailable = loaded.error instanceof ApiError && loaded.error.notAvailable;
  return { loaded, form, set, save, saving, saved, dirty, error, unavailable };
}

import { useCallback } from "react";
import { useCore, useLive } from "./core.js";
import { builtInGeneration, readChatDefaults, type GenerationSettings } from "./generation.js";

/** The chat defaults the core keeps (GET /api/settings chatDefaults), current with the settings event, and a way to save them. */
export function useChatDefaults(): { value: GenerationSettings; loaded: boolean; save: (g: GenerationSettings) => Promise<void> } {
  const { client } = useCore();
  const live = useLive((c) => c.getJson("/api/settings").then(readChatDefaults), ["settings"]);
  const { reload } = live;
  const save = useCallback(
    async (g: GenerationSettings) => {
      await client.patch("/api/settings", { chatDefaults: g });
      reload();
    },
    [client, reload],
  );
  return { value: live.data ?? builtInGeneration, loaded: live.data !== null, save };
}

import { useCallback, useRef } from "react";
import { ApiError } from "../api/client.js";
import type { ChatTool } from "../api/chat.js";
import { useCore, useLive } from "../api/core.js";
import { loadOpenAiTools, loadTools, standingPermissions } from "../api/tools.js";
import type { Decision, ToolCallView } from "./agentLoop.js";

/**
 * What the chat offers the model: the enabled tools (GET /api/tools/openai) and the ones the
 * user allowed for good; none from a core that has no tools (404). Kept current by the `tools`
 * event; `refresh` reads them again (before each answer, so a change on the Tools page counts).
 */
export function useChatTools(): { tools: ChatTool[]; always: ReadonlySet<string>; refresh: () => Promise<{ tools: ChatTool[]; always: ReadonlySet<string> }> } {
  const { client } = useCore();
  const load = useCallback(async () => {
    try {
      const [tools, reply] = await Promise.all([loadOpenAiTools(client), loadTools(client)]);
      return { tools, always: standingPermissions(reply) };
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return { tools: [] as ChatTool[], always: new Set<string>() };
      throw e;
    }
  }, [client]);
  const live = useLive(load, ["tools"]);
  return {
    tools: live.data?.tools ?? [],
    always: live.data?.always ?? new Set<string>(),
    refresh: async () => {
      try {
        return await load();
      } catch {
        return { tools: live.data?.tools ?? [], always: live.data?.always ?? new Set<string>() };
      }
    },
  };
}

/**
 * The user's pending answers to tool calls: the loop asks (`decide`), the call's card answers
 * (`answer`). A stopped loop leaves nothing waiting.
 */
export function useDecisions(): { decide: (call: ToolCallView, signal: AbortSignal) => Promise<Decision>; answer: (callId: string, d: Decision) => void } {
  const waiting = useRef(new Map<string, (d: Decision) => void>());
  const decide = useCallback(
    (call: ToolCallView, signal: AbortSignal) =>
      new Promise<Decision>((resolve) => {
        waiting.current.set(call.id, resolve);
        signal.addEventListener("abort", () => waiting.current.delete(call.id), { once: true });
      }),
    [],
  );
  const answer = useCallback((callId: string, d: Decision) => {
    const r = waiting.current.get(callId);
    waiting.current.delete(callId);
    r?.(d);
  }, []);
  return { decide, answer };
}

import { useCallback, useState } from "react";
import { ApiError, messageOf } from "../../api/client.js";
import type { ChatMessage } from "../../api/chat.js";
import { useCore } from "../../api/core.js";
import { requestParams } from "../../api/generation.js";
import { runAgentLoop } from "../../chat/agentLoop.js";
import { useChatTools, useDecisions } from "../../chat/useChatTools.js";
import { nextKey, toWire, withCall, type DisplayMessage } from "./displayMessage.js";
import type { ChatSession } from "./useChatSession.js";
import { typedOf } from "./attachments/messageBlocks.js";

/**
 * Streams answers into the chat: each through the agent loop (tool calls, the user's decisions on
 * them), its words rendered a few dozen times a second; a new chat is titled after its first
 * question. `onSettled` runs after each answer (the chat list reloads).
 */
export function useAnswerStream(session: ChatSession, onSettled: () => void) {
  const { client, status } = useCore();
  const [busy, setBusy] = useState(false);
  const chatTools = useChatTools();
  const decisions = useDecisions();
  const { sessionId, messages, setMessages, abortRef, started, showRecorded, markCut } = session;
  const { gen, flushGen } = session.generation;
  const contextSize = status?.model?.contextSize ?? null;

  /**
   * Streams an answer to `history` (which ends with the user's message) into a new assistant
   * bubble; or, given `cut` (an answer cut by the token limit, after `history`), the rest of it
   * into its bubble (the core continues an answer sent back as the last message).
   */
  const answer = useCallback(
    async (history: DisplayMessage[], cut?: DisplayMessage) => {
      const ctrl = new AbortController();
      abortRef.current = ctrl;
      setBusy(true);
      const key = cut?.key ?? nextKey();
      setMessages([...history, cut ? { ...cut, streaming: true, cut: false, stopped: false } : { key, role: "assistant", content: "", streaming: true }]);
      const update = (fn: (m: DisplayMessage) => DisplayMessage) => setMessages((ms) => ms.map((m) => (m.key === key ? fn(m) : m)));
      let pending = "";
      let flushTimer: number | null = null;
      const flush = () => {
        flushTimer = null;
        if (!pending) return;
        const text = pending;
        pending = "";
        update((m) => ({ ...m, content: m.content + text }));
      };
      const flushNow = () => {
        if (flushTimer !== null) window.clearTimeout(flushTimer);
        flush();
      };
      const wire: ChatMessage[] = (cut ? [...history, cut] : history).filter((m) => !m.error || m.content || m.steps?.length).flatMap(toWire);
      if (gen.systemPrompt.trim()) wire.unshift({ role: "system", content: gen.systemPrompt.trim() });
      const isNew = sessionId === null;
      // The turn the answer ended in (its last request's, when it used tools), and its chat.
      let turnId: string | null = null;
      let answerSession = sessionId;
      let stopped = false;
      try {
        // The tools as they are now (a change on the Tools page counts from the next answer).
        const { tools, always } = await chatTools.refresh();
        const { info, finishReason } = await runAgentLoop({
          client,
          messages: wire,
          sessionId,
          tools,
          alwaysAllowed: always,
          maxSteps: gen.toolSteps,
          params: requestParams(gen, contextSize),
          signal: ctrl.signal,
          handlers: {
            onStart: (info) => {
              update((m) => ({ ...m, turnId: info.turnId, adapter: info.adapter, preferences: info.preferences }));
              turnId = info.turnId ?? turnId;
              if (info.sessionId) {
                answerSession = info.sessionId;
                started(info.sessionId);
              }
            },
            onModel: (model) => update((m) => ({ ...m, model })),
            onDelta: (d) => {
              // Re-rendering the markdown for every token makes long answers crawl (each render
              // parses the whole text): collect tokens and render them ~30 times a second (a timer,
              // not requestAnimationFrame, so a background tab still fills in).
              pending += d;
              if (flushTimer === null) flushTimer = window.setTimeout(flush, 33);
            },
            // The words so far and the calls become a finished step; the next words start after the cards.
            onToolStep: (step) => {
              flushNow();
              update((m) => ({ ...m, content: "", steps: [...(m.steps ?? []), step] }));
            },
            onCall: (call) => update((m) => ({ ...m, steps: withCall(m.steps, call) })),
            decide: decisions.decide,
          },
        }).then((r) => {
          if (r.stepLimitReached) update((m) => ({ ...m, stepLimit: true }));
          return r;
        });
        flushNow();
        update((m) => ({ ...m, streaming: false, speed: info.speed, cut: finishReason === "length" }));
        if (finishReason === "length" && turnId) markCut(turnId);
        if (isNew && info.sessionId) {
          // What was typed, not the attached files' text (files alone: the core's title, from their names, stands).
          const first = typedOf(history.find((m) => m.role === "user")?.content ?? "");
          const title = first.replace(/\s+/g, " ").trim().slice(0, 48);
          // Best effort: the sidebar shows a readable title; the core may also name sessions itself.
          if (title) await client.patch(`/api/sessions/${encodeURIComponent(info.sessionId)}`, { title }).catch(() => undefined);
        }
      } catch (e) {
        flushNow(); // a stopped or failed answer keeps what had arrived
        stopped = e instanceof DOMException && e.name === "AbortError";
        if (stopped) update((m) => ({ ...m, streaming: false, stopped: true }));
        else update((m) => ({ ...m, streaming: false, error: e instanceof ApiError || e instanceof Error ? e.message : messageOf(e) }));
      } finally {
        if (abortRef.current === ctrl) abortRef.current = null;
        // What is shown becomes what the core keeps: the new answer's branch, with its versions
        // (a regenerated answer or an edited question is a sibling in the tree).
        if (answerSession && turnId) await showRecorded(answerSession, turnId, stopped);
        setBusy(false);
        onSettled();
        void flushGen(); // a new chat's own settings, now that the core has its session
      }
    },
    [client, sessionId, onSettled, gen, contextSize, flushGen, chatTools, decisions.decide, abortRef, setMessages, started, showRecorded, markCut],
  );

  const stop = useCallback(() => abortRef.current?.abort(), [abortRef]);

  return { busy, ...useAnswerRequests(answer, busy, messages), stop, decide: decisions.answer };
}

/** What asks for an answer: a new question, the last one again, an edited one, the rest of a cut answer. */
function useAnswerRequests(answer: (history: DisplayMessage[], cut?: DisplayMessage) => Promise<void>, busy: boolean, messages: DisplayMessage[]) {
  /** Answers the user's new message. */
  const ask = useCallback((text: string) => void answer([...messages, { key: nextKey(), role: "user", content: text }]), [answer, messages]);

  /** Answers the last question again. */
  const regenerate = useCallback(() => {
    if (busy) return;
    const lastUser = messages.map((m) => m.role).lastIndexOf("user");
    if (lastUser < 0) return;
    void answer(messages.slice(0, lastUser + 1));
  }, [answer, busy, messages]);

  /** Asks the question at `index` again as `text`: the chat forks there (the earlier version stays, a sibling). */
  const editQuestion = useCallback(
    (index: number, text: string) => {
      if (busy || messages[index]?.role !== "user") return;
      void answer([...messages.slice(0, index), { key: nextKey(), role: "user", content: text }]);
    },
    [answer, busy, messages],
  );

  /** Asks for the rest of the last answer, cut by the token limit. */
  const continueAnswer = useCallback(() => {
    const last = messages[messages.length - 1];
    if (busy || last?.role !== "assistant" || !last.cut) return;
    void answer(messages.slice(0, -1), last);
  }, [answer, busy, messages]);

  return { ask, regenerate, editQuestion, continueAnswer };
}

import type OpenAI from "openai";

/**
 * Requests shaped like OpenClaw's (docs/openclaw-client.md): a long system prompt, twelve
 * function tools, the history, the new user message, and last a user message holding
 * OpenClaw's internal context. Used by the prefix-cache bench; the text is synthetic.
 */
type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Tool = OpenAI.Chat.Completions.ChatCompletionTool;

const RULES = [
  "Prefer reading a file before you change it, and keep edits small and focused.",
  "When a command may take long, run it in the background and poll the process tool.",
  "Never print secrets; redact tokens and keys that appear in tool output.",
  "Answer in the user's language; keep replies short unless asked for detail.",
  "Use apply_patch for multi-line edits and edit for single replacements.",
  "Summarise what you did at the end of a task, with the files you touched.",
  "If a tool fails, read the error, fix the cause, and try again at most twice.",
  "Ask before deleting files, sending messages, or anything that cannot be undone.",
];

/** A system prompt of about `chars` characters (OpenClaw's is ~38,000). */
export function openclawSystemPrompt(chars = 38_000): string {
  const parts = ["You are a personal assistant running inside OpenClaw.\n\n## Tooling\n"];
  let n = 0;
  let len = parts[0].length;
  while (len < chars) {
    const line = `${n + 1}. [section ${Math.floor(n / RULES.length) + 1}] ${RULES[n % RULES.length]}\n`;
    parts.push(line);
    len += line.length;
    n++;
  }
  return parts.join("").slice(0, chars);
}

const fn = (name: string, description: string, props: Record<string, string>, required: string[]): Tool => ({
  type: "function",
  function: {
    name,
    description,
    parameters: {
      type: "object",
      properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: "string", description: d }])),
      required,
    },
  },
});

/** Twelve tools with the names OpenClaw sends. */
export const openclawTools: Tool[] = [
  fn(
    "exec",
    "Run a shell command in the workspace and return its output.",
    { command: "the command line", cwd: "working directory", timeout: "seconds before the command is stopped" },
    ["command"],
  ),
  fn("read", "Read a text file from the workspace.", { path: "file path", offset: "first line", limit: "number of lines" }, ["path"]),
  fn("write", "Write a text file, replacing its content.", { path: "file path", content: "the new content" }, ["path", "content"]),
  fn("edit", "Replace one exact string in a file.", { path: "file path", oldText: "text to replace", newText: "replacement" }, ["path", "oldText", "newText"]),
  fn("apply_patch", "Apply a unified patch to the workspace.", { input: "the patch text" }, ["input"]),
  fn("ls", "List a directory.", { path: "directory path" }, []),
  fn("process", "Inspect or stop background processes started by exec.", { action: "list, poll, log or kill", sessionId: "process id" }, ["action"]),
  fn("web_search", "Search the web.", { query: "search terms", count: "number of results" }, ["query"]),
  fn("web_fetch", "Fetch a web page as text.", { url: "the address", maxChars: "longest text to return" }, ["url"]),
  fn("memory_search", "Search the assistant's long-term memory notes.", { query: "what to look for" }, ["query"]),
  fn("message", "Send a message on a connected channel.", { channel: "channel name", to: "recipient", text: "message text" }, ["channel", "text"]),
  fn("sessions_list", "List recent agent sessions.", { limit: "number of sessions" }, []),
];

/** OpenClaw's trailing internal-context message: a user message with a text-part array. */
export function internalContextMessage(turn: number): Msg {
  return {
    role: "user",
    content: [
      {
        type: "text",
        text: `<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nruntime: turn ${turn}, cwd /home/user/project, time 2026-11-21T12:0${turn}:00Z\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>`,
      },
    ],
  };
}

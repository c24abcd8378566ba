/**
 * An MCP call result as the text of the `tool` message the model reads: text parts as they
 * are, other parts named in a line, structured content as JSON when there is nothing else; cut
 * to what the context can hold, saying where.
 */

/** The parts of CallToolResult this module reads (kept loose: servers send what they send). */
export interface McpResultLike {
  content?: Array<{
    type: string;
    text?: string;
    mimeType?: string;
    data?: string;
    uri?: string;
    name?: string;
    resource?: { uri?: string; text?: string; mimeType?: string };
  }>;
  structuredContent?: unknown;
  isError?: boolean;
  toolResult?: unknown;
}

export function resultText(r: McpResultLike): string {
  const parts: string[] = [];
  for (const c of r.content ?? []) {
    if (c.type === "text") parts.push(c.text ?? "");
    else if (c.type === "image" || c.type === "audio")
      parts.push(`[${c.type}: ${c.mimeType ?? "unknown type"}, ${Math.floor(((c.data ?? "").length * 3) / 4)} bytes]`);
    else if (c.type === "resource")
      parts.push(c.resource?.text ?? `[resource: ${c.resource?.uri ?? "?"}${c.resource?.mimeType ? `, ${c.resource.mimeType}` : ""}]`);
    else if (c.type === "resource_link") parts.push(`[resource link: ${c.uri ?? "?"}${c.name ? ` (${c.name})` : ""}]`);
    else parts.push(`[${c.type} content]`);
  }
  if (parts.length === 0 && r.structuredContent !== undefined) return JSON.stringify(r.structuredContent);
  // Servers on the old protocol answer with `toolResult`.
  if (parts.length === 0 && r.toolResult !== undefined) return typeof r.toolResult === "string" ? r.toolResult : JSON.stringify(r.toolResult);
  return parts.join("\n");
}

/** Cuts `text` to `max` characters (never inside a surrogate pair), ending with a line that says where and how much was left out. */
export function cutResult(text: string, max: number): { content: string; truncated: boolean } {
  if (text.length <= max) return { content: text, truncated: false };
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return {
    content: `${text.slice(0, end)}\n\n[result cut at character ${end} of ${text.length}: the rest (${text.length - end} characters) was left out to fit the context]`,
    truncated: true,
  };
}

/**
 * How many characters of a result the model's context can take: a quarter of the context at
 * ~4 characters a token, within [2,000, 32,000]; 16,000 without a model.
 */
export function resultCharsFor(contextTokens: number | null): number {
  if (!contextTokens) return 16_000;
  return Math.max(2_000, Math.min(32_000, contextTokens));
}

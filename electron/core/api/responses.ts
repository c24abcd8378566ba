/** POST /v1/responses (OpenAI's Responses API, the subset served): server/routes/responses.ts. */

export interface ResponseOutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface ResponseOutputMessage {
  type: "message";
  id: string;
  status: "completed" | "incomplete" | "in_progress";
  role: "assistant";
  content: ResponseOutputText[];
}

export interface ResponseFunctionCall {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: "completed" | "incomplete" | "in_progress";
}

export type ResponseOutputItem = ResponseOutputMessage | ResponseFunctionCall;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseFunctionTool {
  type: "function";
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "completed" | "incomplete" | "in_progress" | "failed";
  error: { code: string; message: string } | null;
  incomplete_details: { reason: "max_output_tokens" } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: ResponseOutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: null; summary: null };
  store: boolean;
  temperature: number;
  /** the output format asked for: plain text, any JSON object, or JSON held to a schema */
  text: {
    format:
      | { type: "text" }
      | { type: "json_object" }
      | { type: "json_schema"; name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null };
  };
  tool_choice: "auto" | "none" | "required" | { type: "function"; name: string };
  tools: ResponseFunctionTool[];
  top_p: number;
  truncation: "disabled";
  usage: ResponseUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}

/** A streamed event (`event: <type>` + `data:` line); every one carries `type` and `sequence_number`. */
export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/** POST /v1/embeddings (OpenAI wire format): server/routes/embeddings.ts. */

export interface EmbeddingObject {
  object: "embedding";
  index: number;
  /** floats, or (encoding_format "base64") the little-endian float32 bytes in base64 */
  embedding: number[] | string;
}

export interface EmbeddingsReply {
  object: "list";
  data: EmbeddingObject[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

// No UI imports here: the OpenClaw end-to-end test (test/openclaw/openclaw.test.ts) loads this
// module in Node to write the same config the Settings page shows.

/** The provider config OpenClaw needs, exactly in the shape docs/openclaw-client.md shows. */
export function openClawSnippet(apiBase: string, token: string, modelId: string, contextWindow: number): string {
  const config = {
    models: {
      providers: {
        clawrl: {
          baseUrl: `${apiBase}/v1`,
          apiKey: token,
          api: "openai-completions",
          models: [
            {
              id: modelId,
              name: modelId,
              reasoning: false,
              input: ["text"],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow,
              maxTokens: 1024,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: `clawrl/${modelId}` } } },
  };
  return JSON.stringify(config, null, 2);
}

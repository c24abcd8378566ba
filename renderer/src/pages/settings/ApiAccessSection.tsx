import { useEffect, useState } from "react";
import { servedModelId } from "../../api/chat.js";
import { useCore } from "../../api/core.js";
import { openClawSnippet } from "../../api/openclawSnippet.js";
import { CopyButton } from "../../components/Markdown.js";

/** "API access": the API address, the token (hidden until asked) and the OpenClaw provider snippet. */
export function ApiAccessSection() {
  const { client, status } = useCore();
  const [showToken, setShowToken] = useState(false);
  const [modelId, setModelId] = useState<string>("model");
  useEffect(() => {
    servedModelId(client).then(setModelId, () => undefined);
  }, [client]);

  const token = client.token ?? "";
  const apiBase = client.config.apiBase;
  const snippet = openClawSnippet(apiBase, token, modelId, status?.model?.contextSize ?? 32768);

  return (
    <>
      <h2>API access</h2>
      <div className="kv">
        <span>API address</span>
        <code>{apiBase}/v1</code>
        <CopyButton text={`${apiBase}/v1`} label="Copy API address" />
        <span>Token</span>
        <code>{showToken ? token : "•".repeat(Math.min(token.length, 24))}</code>
        <span>
          <button type="button" onClick={() => setShowToken((s) => !s)}>
            {showToken ? "Hide token" : "Show token"}
          </button>{" "}
          <CopyButton text={token} label="Copy token" />
        </span>
      </div>
      <h3>OpenClaw provider snippet</h3>
      <p className="muted small">Put this in openclaw.json (the file OPENCLAW_CONFIG_PATH names).</p>
      <div className="code-block">
        <div className="code-head">
          <span>openclaw.json</span>
          <CopyButton text={snippet} label="Copy OpenClaw snippet" />
        </div>
        <pre aria-label="OpenClaw snippet">{showToken ? snippet : snippet.replace(JSON.stringify(token), '"<token: Show token to see it>"')}</pre>
      </div>
    </>
  );
}

import type { RunningCore } from "../../electron/core/core.js";

/** A call to the core's app API with its bearer token; the body goes as JSON, the reply is parsed (null when empty). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read many differently shaped JSON bodies field by field; the assertions check the fields
export async function callApi(core: RunningCore, method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${core.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${core.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

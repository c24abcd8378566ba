// A request the core is in the middle of and that will not finish by itself: one write holding
// a complete request and the start of a second one (headers unfinished) on the same keep-alive
// connection. Once the first answer is back, the server has read both, so it is parsing the
// second: the connection is busy, not idle, with no race on when the bytes arrive.
import { once } from "node:events";
import net from "node:net";

export interface InFlight {
  sock: net.Socket;
  /** Resolves when the server closed the connection (cleanly or by reset). */
  closed: Promise<void>;
  /** Everything the server has sent so far. */
  received: () => string;
}

export async function inFlightRequest(url: string): Promise<InFlight> {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  await once(sock, "connect");
  sock.on("error", () => {});
  const closed = new Promise<void>((resolve) => sock.on("close", () => resolve()));
  let data = "";
  const firstAnswer = new Promise<void>((resolve, reject) => {
    sock.setEncoding("utf8").on("data", (d: string) => {
      data += d;
      if (data.includes('{"ok":true}')) resolve();
    });
    sock.on("close", () => reject(new Error(`connection closed before the first answer: ${JSON.stringify(data)}`)));
  });
  // The Host must name the core (its Host check refuses any other).
  sock.write(`GET /healthz HTTP/1.1\r\nHost: ${u.host}\r\n\r\nGET /healthz HTTP/1.1\r\nHost: ${u.host}\r\nX-Slow: `);
  await firstAnswer;
  return { sock, closed, received: () => data };
}

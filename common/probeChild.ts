/**
 * What a doctor probe child and its parent (probeRunner.ts) say to each other over IPC: the
 * parent sends one request; the child sends progress lines, then one answer, and exits.
 */
import { z } from "zod";

export const childMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("progress"), line: z.string() }),
  z.object({ type: z.literal("result"), data: z.unknown() }),
  z.object({ type: z.literal("unavailable"), reason: z.string() }),
  z.object({ type: z.literal("skipped"), reason: z.string() }),
  z.object({ type: z.literal("failed"), reason: z.string() }),
]);
export type ChildMessage = z.infer<typeof childMessageSchema>;

export function sendToParent(msg: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(msg)}\n`);
      resolve();
    } else process.send(msg, undefined, {}, () => resolve());
  });
}

/**
 * The child's main: reads the request (checked by `schema`), runs `handle`, sends its answer
 * and exits. A thrown error is a "failed" answer with its message.
 */
export function probeMain<S extends z.ZodType>(schema: S, handle: (req: z.infer<S>, progress: (line: string) => Promise<void>) => Promise<ChildMessage>): void {
  process.once("message", (raw) => {
    const progress = (line: string) => sendToParent({ type: "progress", line });
    const run = async (): Promise<ChildMessage> => {
      const req = schema.safeParse(raw);
      if (!req.success) return { type: "failed", reason: `bad request: ${req.error.issues[0]?.message ?? "?"}` };
      return handle(req.data, progress);
    };
    // void: the catch turns any failure into an answer, and sending never rejects.
    void run()
      .catch((err: unknown): ChildMessage => ({ type: "failed", reason: (err instanceof Error ? err.message : String(err)).split("\n")[0] }))
      .then(sendToParent)
      // exit, not a return: native backends keep threads and handles alive.
      .then(() => process.exit(0));
  });
}

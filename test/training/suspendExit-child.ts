/**
 * A core that exits while its trainer is suspended (trainerSuspend.test.ts): starts a trainer
 * worker, suspends it once it is up, prints its pid and exits.
 */
import { WorkerClient } from "../../electron/core/training/workerClient.js";

const worker = new WorkerClient({ niceness: 0, onLog: () => undefined });
// Up: the worker answers (an error reply still proves it is running and reading messages).
await worker.request({ type: "memory" }).catch(() => undefined);
if (!worker.suspend()) throw new Error("could not suspend the trainer");
process.stdout.write(`${worker.pid}\n`);
process.exit(0);

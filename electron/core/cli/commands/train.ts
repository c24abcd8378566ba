import fs from "node:fs";
import { METHODS } from "../../../../trainer/protocol.js";
import { CliError, choiceOpt, floatOpt, intOpt, requiredString, stringOpt, type CommandSpec } from "../command.js";

export const train: CommandSpec = {
  name: "train",
  usage:
    "--model M --data FILE.jsonl --out DIR [--method binary|opd|combined|topk] [--resume DIR] [--steps N] [--lr X] [--rank R] [--alpha A] [--max-context N] [--batch-size N] [--backend NAME] [--teacher current|base] [--kl-beta B]",
  summary:
    'Train a LoRA adapter offline from samples, one JSON object per line: {"messages": [...], "response": "...", "reward"?: -1|0|1, "hint"?: "..."} ' +
    "(or served prompt_tokens/response_tokens/logprobs). Writes DIR/adapter.gguf, DIR/optimizer.bin and DIR/metrics.json.",
  options: {
    model: { type: "string", value: "FILE", description: "base GGUF model (llama, qwen2 or qwen3)" },
    data: { type: "string", value: "FILE", description: "training samples (JSONL)" },
    out: { type: "string", value: "DIR", description: "output directory (created; files replaced atomically)" },
    method: { type: "string", value: "NAME", description: "binary, opd, combined (default) or topk" },
    resume: { type: "string", value: "DIR", description: "continue from a previous output directory" },
    steps: { type: "string", value: "N", description: "optimizer steps (default 10)" },
    lr: { type: "string", value: "X", description: "learning rate (default 1e-4, or the resumed run's)" },
    rank: { type: "string", value: "R", description: "LoRA rank (default 16)" },
    alpha: { type: "string", value: "A", description: "LoRA alpha (default 32; scale = alpha/rank)" },
    "max-context": { type: "string", value: "N", description: "maximum training context in tokens; longer samples keep the end of the prompt (default 2048)" },
    "batch-size": { type: "string", value: "N", description: "samples per step (default 8)" },
    seed: { type: "string", value: "N", description: "seed of the fresh adapter's A matrices (default 0)" },
    backend: {
      type: "string",
      value: "NAME",
      description: "tfjs backend to start from: tfjs-node-gpu, webgpu, tfjs-node, wasm or cpu (webgpu by name also takes a software adapter)",
    },
    teacher: { type: "string", value: "WHO", description: "who scores the hinted prompt for OPD: current (policy, default) or base (no adapter)" },
    "kl-beta": { type: "string", value: "B", description: "weight of the k3 KL to the frozen base (default 0)" },
  },
  async run(args) {
    const modelPath = requiredString(args, "model");
    const dataPath = requiredString(args, "data");
    const outDir = requiredString(args, "out");
    const method = choiceOpt(args, "method", METHODS) ?? "combined";
    const resumeDir = stringOpt(args, "resume");
    const steps = intOpt(args, "steps", 1, 1_000_000) ?? 10;
    const lr = floatOpt(args, "lr", Number.MIN_VALUE, 1);
    const rank = intOpt(args, "rank", 1, 1024);
    const alpha = floatOpt(args, "alpha", Number.MIN_VALUE, 1e6);
    const maxContext = intOpt(args, "max-context", 2, 1 << 20);
    const batchSize = intOpt(args, "batch-size", 1, 4096);
    const seed = intOpt(args, "seed", 0, 2 ** 31 - 1);
    const backend = choiceOpt(args, "backend", ["tfjs-node-gpu", "webgpu", "tfjs-node", "wasm", "cpu"] as const);
    const teacher = choiceOpt(args, "teacher", ["current", "base"] as const);
    const klBeta = floatOpt(args, "kl-beta", 0, 100);
    for (const [flag, p] of [
      ["--model", modelPath],
      ["--data", dataPath],
    ] as const) {
      if (!fs.existsSync(p)) throw new CliError(`${flag} ${p}: no such file`);
    }
    if (resumeDir !== undefined && !fs.existsSync(resumeDir)) throw new CliError(`--resume ${resumeDir}: no such directory`);
    // Loaded here, not at the top: `clawrl train --help` should not pay for tfjs.
    const { runTraining } = await import("../../../../trainer/entries/offlineTrain.js");
    const t0 = performance.now();
    const metrics = await runTraining({
      modelPath,
      dataPath,
      outDir,
      resumeDir,
      method,
      steps,
      lr,
      rank,
      alpha,
      maxContext,
      batchSize,
      seed,
      backend,
      teacher,
      ...(klBeta !== undefined ? { ppo: { klBeta } } : {}),
      log: (line) => console.log(line),
      // At a real size on a CPU a step takes minutes: on a terminal, one line says how far it is.
      onProgress: (done, n) => {
        if (process.stderr.isTTY) process.stderr.write(`\rstep ${Math.floor(done) + 1}/${n}: ${Math.floor((done % 1) * 100)}%`.padEnd(24));
      },
      onStep: (m, i, n) => {
        if (process.stderr.isTTY) process.stderr.write(`\r${"".padEnd(24)}\r`);
        console.log(
          `step ${i}/${n}  loss ${m.loss.toFixed(4)}  grad-norm ${m.gradNorm.toFixed(3)}${m.clipped ? " (clipped)" : ""}  tokens/s ${m.tokensPerSecond.toFixed(0)}  (${m.trainedTokens} trained tokens, ${m.samples} samples${m.keptBlocks ? `, ${m.keptBlocks} blocks kept` : ""})`,
        );
      },
    });
    console.log(`wrote ${outDir}/adapter.gguf, optimizer.bin, metrics.json (step ${metrics.totalSteps}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  },
};

import fs from "node:fs";
import path from "node:path";
import type { EvalCore } from "./inProcessCore.js";
import { sampleById, turnIdOfSample } from "../rollout/samples.js";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import type { Sample } from "../../../models/samples/sample.js";
import type { CheckpointView } from "../api/training.js";
import { lrScalesOf, runBatchSize, runLearningRate, trainSettingsOf } from "../training/trainOptions.js";

/**
 * Exports what the final adapter was trained on, in the `clawrl train --data` format: one JSONL
 * file per checkpoint on the chain that leads to it (root first), with the `clawrl train`
 * commands that replay the chain (each run resumes from the previous one, with the settings and
 * learning-rate scale and steps the supervisor used), plus all of them in one samples.jsonl.
 */
export function exportSamples(
  core: EvalCore,
  ckpts: CheckpointView[],
  dir: string,
  model: string,
  method: string,
): { samplesPath: string | null; replay: string[]; notes: string[] } {
  const notes: string[] = [];
  const byN = new Map(ckpts.map((c) => [c.n, c]));
  const active = ckpts.find((c) => c.active) ?? null;
  if (!active) return { samplesPath: null, replay: [], notes: ["no checkpoint was published: the final adapter is the base model, nothing to replay"] };
  const chain: CheckpointView[] = [];
  for (let c: CheckpointView | undefined = active; c; c = c.parent === null ? undefined : byN.get(c.parent)) chain.unshift(c);
  if (chain[0].parent !== null) notes.push(`checkpoint ${chain[0].parent} (a parent) is no longer kept: the replay starts after it`);
  // The learning-rate scale each run used, from the policy's events in the store (lrPolicy.ts; the checkpoints' history for a data dir from before them).
  const lrScale = lrScalesOf(ckpts, undefined, core.store.state.training.lrEvents);
  const st = core.store.settings;
  const t = trainSettingsOf(st);
  const replayDir = path.join(dir, "replay");
  fs.mkdirSync(replayDir, { recursive: true });
  const all: string[] = [];
  const replay: string[] = [];
  let prev: string | null = null;
  let prevSteps = 0;
  for (const c of chain) {
    const metrics = JSON.parse(fs.readFileSync(path.join(core.paths.checkpoints, String(c.n), "metrics.json"), "utf8")) as {
      sampleIds?: string[];
      totalSteps?: number;
    };
    const lines = (metrics.sampleIds ?? []).map((id) => JSON.stringify(sampleOf(core, id)));
    all.push(...lines);
    const data = path.join(replayDir, `ckpt-${c.n}.jsonl`);
    writeFileAtomicSync(data, lines.join("\n") + "\n", 0o644);
    const out = path.join(replayDir, `out-${c.n}`);
    const lr = runLearningRate(st, lrScale.get(c.n) ?? 1);
    replay.push(
      [
        "clawrl train",
        `--model ${q(model)}`,
        `--data ${q(data)}`,
        `--out ${q(out)}`,
        `--method ${method}`,
        // The steps this run took (the steps policy's count then: stepsPolicy.ts): its optimizer's count less its parent's.
        `--steps ${(metrics.totalSteps ?? 0) - prevSteps}`,
        `--batch-size ${runBatchSize(lines.length, st)}`,
        `--lr ${lr}`,
        `--rank ${t.rank}`,
        `--alpha ${t.alpha}`,
        `--max-context ${t.maxContext}`,
        `--teacher ${t.teacher}`,
        `--seed ${t.seed}`,
        ...(t.klBeta ? [`--kl-beta ${t.klBeta}`] : []),
        ...(prev ? [`--resume ${q(prev)}`] : []),
      ].join(" "),
    );
    prev = out;
    prevSteps = metrics.totalSteps ?? 0;
  }
  const samplesPath = path.join(dir, "samples.jsonl");
  writeFileAtomicSync(samplesPath, all.join("\n") + "\n", 0o644);
  writeFileAtomicSync(
    path.join(replayDir, "replay.sh"),
    `#!/bin/sh\n# Replays the checkpoints ${chain.map((c) => c.n).join(" → ")}; the last out-N/adapter.gguf is the final adapter.\nset -e\n${replay.join("\n")}\n`,
    0o755,
  );
  return { samplesPath, replay, notes };
}

const q = (s: string) => (/^[\w./@:+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The trainer sample of a turn, built as the sample pool builds it (served tokens, reward, hint; at-least-one promotion). */
function sampleOf(core: EvalCore, id: string): Sample {
  const e = core.store.turnEntry(turnIdOfSample(id));
  if (!e) throw new Error(`sample ${id} is not in the log`);
  const made = sampleById(core.store, id);
  // Feedback withdrawn after the run: the turn trains nothing now (the replay then differs).
  if (made) return made;
  const t = core.store.readTurn(e.turnId);
  return { prompt_tokens: t.promptTokens, response_tokens: t.responseTokens };
}

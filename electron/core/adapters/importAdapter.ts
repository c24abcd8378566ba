/**
 * An adapter trained elsewhere, made into a candidate checkpoint: a PEFT LoRA directory (or its
 * adapter_model.safetensors) or a llama.cpp LoRA GGUF is read, checked against the served base
 * (architecture, layer count, shapes, rank, finite values; models/adapters/interchange.ts) and only
 * then written, in llama.cpp's format, into a staging directory laid out as the trainer writes
 * candidates: adapter.gguf, optimizer.bin (AdamW at step 0: the trainer trains on from the
 * imported weights with fresh moments) and metrics.json. The supervisor runs it through the
 * publish gate and commits it like a trained candidate (TrainingSupervisor.importCandidate).
 */
import fs from "node:fs";
import path from "node:path";
import { fsyncDir, writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import {
  AdapterMismatchError,
  baseIdentity,
  looksLikePeft,
  readBaseConfig,
  readGgufAdapter,
  readPeftAdapter,
  writeGgufAdapter,
  type PortableAdapter,
} from "../../../models/adapters/interchange.js";
import { linearShape } from "../../../models/arch/layout.js";
import { writeOptimizerState } from "../../../models/adapters/optimizerState.js";
import type { MomentData } from "../../../models/adapters/optimizerState.js";
import type { ImportedAdapterView } from "../api/training.js";

export { AdapterMismatchError };

/** What an import brought in (kept in the checkpoint's metrics.json as `imported`): the contract's shape. */
export type ImportSummary = ImportedAdapterView;

/** Reads and checks the adapter at `source` against the base GGUF; writes nothing. */
export function readImport(source: string, basePath: string): PortableAdapter {
  const abs = path.resolve(source);
  if (!fs.existsSync(abs)) throw new AdapterMismatchError(`${source}: no such file or directory`);
  let base: ReturnType<typeof readBaseConfig>;
  try {
    base = readBaseConfig(basePath);
  } catch (e) {
    throw new AdapterMismatchError(`the served model cannot take an adapter from the app: ${(e as Error).message}`);
  }
  const { config, file } = base;
  return looksLikePeft(abs) ? readPeftAdapter(abs, config, baseIdentity(file)) : readGgufAdapter(abs, config);
}

export function summarize(a: PortableAdapter, source: string): ImportSummary {
  return {
    format: a.source.format,
    source: path.resolve(source),
    rank: a.rank,
    alpha: a.alpha,
    pairs: a.pairs.length,
    layers: new Set(a.pairs.map((p) => p.layer)).size,
    targets: [...new Set(a.pairs.map((p) => p.target))],
    dtypes: a.source.dtypes,
    baseModel: a.source.baseModel,
    warnings: a.warnings,
  };
}

/**
 * Checks `source` against the base at `basePath`, then writes the candidate into `stagingDir`
 * (a new directory). A refusal (AdapterMismatchError) happens before anything is written; a
 * failure while writing removes the staging directory.
 */
export function stageImport(source: string, basePath: string, stagingDir: string): ImportSummary {
  const adapter = readImport(source, basePath);
  const { config } = readBaseConfig(basePath);
  const summary = summarize(adapter, source);
  if (fs.existsSync(stagingDir)) throw new Error(`${stagingDir} already exists: candidates go to new directories`);
  fs.mkdirSync(stagingDir, { recursive: true });
  try {
    writeGgufAdapter(path.join(stagingDir, "adapter.gguf"), adapter, "clawrl-import");
    // AdamW's moments, zero, under the names and [in, rank] / [rank, out] shapes the trainer gives its variables.
    const m: Record<string, MomentData> = {};
    const v: Record<string, MomentData> = {};
    for (const p of adapter.pairs) {
      const [nIn, nOut] = linearShape(config, p.target);
      const key = `blk.${p.layer}.${p.target}.weight`;
      for (const [name, shape] of [
        [`${key}.lora_a`, [nIn, adapter.rank]],
        [`${key}.lora_b`, [adapter.rank, nOut]],
      ] as const) {
        m[name] = { shape: [...shape], data: new Float32Array(shape[0] * shape[1]) };
        v[name] = { shape: [...shape], data: new Float32Array(shape[0] * shape[1]) };
      }
    }
    const identity = { arch: config.arch, nLayer: config.nLayer, nEmbd: config.nEmbd, nVocab: config.nVocab };
    writeOptimizerState(path.join(stagingDir, "optimizer.bin"), { step: 0, m, v }, { model: identity, rank: adapter.rank, alpha: adapter.alpha });
    // metrics.json as the trainer writes it (the fields a resume reads: model, totalSteps, steps), plus what was imported.
    const metrics = {
      version: 1,
      model: { ...identity, file: basePath },
      rank: adapter.rank,
      alpha: adapter.alpha,
      totalSteps: 0,
      samples: 0,
      truncatedSamples: 0,
      backend: "import",
      steps: [],
      imported: { ...summary, at: new Date().toISOString() },
    };
    writeFileAtomicSync(path.join(stagingDir, "metrics.json"), `${JSON.stringify(metrics, null, 2)}\n`, 0o644);
    fsyncDir(stagingDir);
  } catch (e) {
    fs.rmSync(stagingDir, { recursive: true, force: true });
    throw e;
  }
  return summary;
}

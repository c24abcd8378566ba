/**
 * A checkpoint's adapter out of the app, for standard tools:
 * - gguf: the llama.cpp LoRA file and a README with the llama.cpp / llama-server command lines;
 * - ollama: the same file beside a Modelfile (`FROM` the base GGUF, `ADAPTER ./adapter.gguf`);
 * - peft: Hugging Face PEFT's adapter_model.safetensors + adapter_config.json (llama's Q/K
 *   lora_B rows un-permuted back to HF's layout; see models/adapters/peft.ts), and a README.
 * Every file is written atomically (temp name, fsync, rename); the adapter is checked against
 * the base first, so a damaged checkpoint exports nothing.
 */
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "../../../common/fs/atomicFile.js";
import { baseIdentity, readBaseConfig, readGgufAdapter, writePeftAdapter } from "../../../models/adapters/interchange.js";

export const EXPORT_FORMATS = ["gguf", "peft", "ollama"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportAdapterOptions {
  /** the checkpoint's adapter.gguf */
  adapterPath: string;
  /** the base GGUF it was trained on */
  basePath: string;
  format: ExportFormat;
  outDir: string;
  /** what to call it in READMEs and the Ollama model name, e.g. "ckpt-3" */
  label: string;
  /** PEFT's base_model_name_or_path; default: from the base GGUF's metadata, else null */
  baseModelId?: string | null;
}

export interface ExportResult {
  files: string[];
  /** base_model_name_or_path written (peft) */
  baseModelId: string | null;
  rank: number;
  alpha: number;
  pairs: number;
}

/** Exports the adapter; throws AdapterMismatchError (nothing written) if it does not fit the base. */
export function exportAdapter(o: ExportAdapterOptions): ExportResult {
  const { config, file } = readBaseConfig(o.basePath);
  const adapter = readGgufAdapter(o.adapterPath, config);
  const ident = baseIdentity(file);
  const baseModelId = o.baseModelId !== undefined ? o.baseModelId : ident.hfRepo;
  fs.mkdirSync(o.outDir, { recursive: true });
  const files: string[] = [];
  const write = (name: string, data: string | Uint8Array, mode = 0o644) => {
    const p = path.join(o.outDir, name);
    writeFileAtomicSync(p, data, mode);
    files.push(p);
  };
  const base = path.resolve(o.basePath);
  const scale = `scale alpha/rank = ${fmt(adapter.alpha)}/${adapter.rank} = ${fmt(adapter.alpha / adapter.rank)}`;
  switch (o.format) {
    case "gguf":
      write("adapter.gguf", fs.readFileSync(o.adapterPath));
      write("README.md", ggufReadme(o.label, base, config.arch, scale));
      break;
    case "ollama":
      write("adapter.gguf", fs.readFileSync(o.adapterPath));
      write(
        "Modelfile",
        `# ClawRL ${o.label}: a LoRA adapter (${config.arch}, rank ${adapter.rank}) on its base model\nFROM ${base}\nADAPTER ./adapter.gguf\n`,
      );
      write("README.md", ollamaReadme(o.label, base));
      break;
    case "peft": {
      const r = writePeftAdapter(o.outDir, adapter, config, baseModelId);
      files.push(...r.files);
      write("README.md", peftReadme(o.label, base, config.arch, baseModelId, ident.name, scale));
      break;
    }
  }
  return { files, baseModelId: o.format === "peft" ? baseModelId : null, rank: adapter.rank, alpha: adapter.alpha, pairs: adapter.pairs.length };
}

const fmt = (x: number) => String(Number(x.toPrecision(6)));
const quote = (p: string) => (/^[\w./:@%+=,-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`);

function ggufReadme(label: string, base: string, arch: string, scale: string): string {
  return `# ClawRL adapter ${label} (llama.cpp LoRA)

\`adapter.gguf\` is a LoRA adapter in llama.cpp's GGUF format (architecture ${arch}, ${scale}) for the
base model it was trained on:

    ${base}

Use it with llama.cpp's tools on that same base model:

    llama-cli    -m ${quote(base)} --lora adapter.gguf
    llama-server -m ${quote(base)} --lora adapter.gguf --port 8080

(\`--lora-scaled adapter.gguf 0.5\` applies it at half strength; 1 is what the app serves.)
Another base model, even a differently quantized copy of the same one, changes what the adapter
does only by that quantization; a different model is refused or gives nonsense.
`;
}

function ollamaReadme(label: string, base: string): string {
  return `# ClawRL adapter ${label} for Ollama

\`Modelfile\` builds a model from the base GGUF (\`FROM ${base}\`) with this LoRA adapter
(\`ADAPTER ./adapter.gguf\`, llama.cpp's format, which Ollama reads):

    ollama create clawrl-${label} -f Modelfile
    ollama run clawrl-${label}

Ollama copies the base and the adapter into its own store at \`create\`. The chat template comes
from the base GGUF's metadata.
`;
}

function peftReadme(label: string, base: string, arch: string, baseModelId: string | null, ggufName: string | null, scale: string): string {
  const id = baseModelId ?? "<the Hugging Face model the GGUF was converted from>";
  return `# ClawRL adapter ${label} (Hugging Face PEFT)

A LoRA adapter in PEFT's layout: \`adapter_model.safetensors\` (float32; tensors
\`base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight\` and
\`...mlp.{gate,up,down}_proj.lora_{A,B}.weight\`, lora_A [r, in], lora_B [out, r]) and
\`adapter_config.json\` (r, lora_alpha, target_modules; ${scale}, PEFT's lora_alpha / r).

It was trained on the GGUF model \`${base}\`${ggufName ? ` ("${ggufName}")` : ""}, architecture ${arch}.
${baseModelId ? `base_model_name_or_path is \`${baseModelId}\`, from that GGUF's metadata.` : "That GGUF does not name its Hugging Face model, so base_model_name_or_path is null: pass the model yourself."}
${arch === "llama" ? "\nllama.cpp's converter permutes the rows of q_proj and k_proj for llama models (its RoPE layout); those\nlora_B rows are permuted back here, so the adapter applies to the Hugging Face weights as they are.\n" : ""}
    from transformers import AutoModelForCausalLM
    from peft import PeftModel
    base = AutoModelForCausalLM.from_pretrained("${id}")
    model = PeftModel.from_pretrained(base, ".")   # this directory

Train on with TRL/PEFT (\`is_trainable=True\`), then bring the result back into the app with
\`clawrl adapters import DIR\` or the Checkpoints page's "Import adapter…": it is checked against the
served model, converted to llama.cpp's format and goes through the publish gate like any checkpoint.
The Hugging Face model must be the one the GGUF was made from; a quantized GGUF differs from it by
its quantization.
`;
}

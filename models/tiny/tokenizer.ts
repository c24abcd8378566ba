/**
 * Byte-level BPE vocabulary for the tiny models, in the GPT-2 style llama.cpp loads as
 * `tokenizer.ggml.model = "gpt2"`: the 256 byte tokens (GPT-2 byte-to-unicode mapping), merges
 * learned deterministically from a small embedded English text, then the ChatML specials.
 */
import { TRAINING_TEXT } from "./trainingText.js";

export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** llama.cpp token types (`enum llama_token_type`). */
export const TOKEN_TYPE_NORMAL = 1;
export const TOKEN_TYPE_CONTROL = 3;

export interface TinyVocab {
  tokens: string[];
  tokenTypes: number[];
  merges: string[];
  endOfText: number;
  imStart: number;
  imEnd: number;
}

/**
 * GPT-2's reversible byte→unicode table: printable Latin-1 bytes map to themselves, the rest
 * to code points from 256 up, so every token is a printable string without spaces.
 */
export function byteToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const table = new Array<string>(256);
  const kept = new Set(keep);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = kept.has(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return table;
}

/** Pre-tokenizer close to the GPT-2/Qwen split: words keep their leading space. */
const PRETOKENIZE = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/**
 * Learns up to `maxMerges` merges from `text`: repeatedly merges the most frequent adjacent
 * pair (ties broken by the pair's text, so the result is deterministic), stopping when no
 * pair occurs at least twice.
 */
export function learnMerges(text: string, maxMerges: number): string[] {
  const b2u = byteToUnicode();
  const wordCounts = new Map<string, number>();
  for (const m of text.matchAll(PRETOKENIZE)) {
    const mapped = [...Buffer.from(m[0], "utf8")].map((b) => b2u[b]).join("\u0000");
    wordCounts.set(mapped, (wordCounts.get(mapped) ?? 0) + 1);
  }
  // Sorted so the iteration order (and thus everything after) does not depend on Map insertion.
  const words = [...wordCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([w, count]) => ({ symbols: w.split("\u0000"), count }));
  const merges: string[] = [];
  while (merges.length < maxMerges) {
    const pairs = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.symbols.length; i++) {
        const key = `${w.symbols[i]} ${w.symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + w.count);
      }
    }
    let best: string | null = null;
    let bestCount = 1;
    for (const [key, count] of pairs) {
      if (count > bestCount || (count === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = count;
      }
    }
    if (best === null) break;
    merges.push(best);
    const [left, right] = best.split(" ");
    for (const w of words) {
      const next: string[] = [];
      for (let i = 0; i < w.symbols.length; i++) {
        if (i + 1 < w.symbols.length && w.symbols[i] === left && w.symbols[i + 1] === right) {
          next.push(left + right);
          i++;
        } else {
          next.push(w.symbols[i]);
        }
      }
      w.symbols = next;
    }
  }
  return merges;
}

/** The full vocabulary: ids 0..255 are the bytes in byte order, then merges, then specials. */
export function buildTinyVocab(maxMerges = 320): TinyVocab {
  const tokens = byteToUnicode();
  const merges = learnMerges(TRAINING_TEXT, maxMerges);
  const seen = new Set(tokens);
  for (const m of merges) {
    const merged = m.replace(" ", "");
    if (!seen.has(merged)) {
      seen.add(merged);
      tokens.push(merged);
    }
  }
  const tokenTypes = tokens.map(() => TOKEN_TYPE_NORMAL);
  const base = tokens.length;
  for (const s of SPECIAL_TOKENS) {
    tokens.push(s);
    tokenTypes.push(TOKEN_TYPE_CONTROL);
  }
  return { tokens, tokenTypes, merges, endOfText: base, imStart: base + 1, imEnd: base + 2 };
}

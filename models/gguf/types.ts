/**
 * GGUF v3 types shared by the reader, the writer and every consumer (inspect, trainer,
 * tiny-model). Numbering follows ggml (`enum ggml_type`) and the GGUF spec.
 */

/** ggml tensor types (the ones we name; others are reported as unknown by number). */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
}

/** GGUF metadata value types. */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** A metadata value with its wire type (needed to write it back unchanged). */
export type GgufMetaValue =
  | {
      type:
        | GgufValueType.UINT8
        | GgufValueType.INT8
        | GgufValueType.UINT16
        | GgufValueType.INT16
        | GgufValueType.UINT32
        | GgufValueType.INT32
        | GgufValueType.FLOAT32
        | GgufValueType.FLOAT64;
      value: number;
    }
  | { type: GgufValueType.UINT64 | GgufValueType.INT64; value: bigint }
  | { type: GgufValueType.BOOL; value: boolean }
  | { type: GgufValueType.STRING; value: string }
  | { type: GgufValueType.ARRAY; itemType: Exclude<GgufValueType, GgufValueType.ARRAY>; value: Array<number | bigint | boolean | string> };

export interface GgufTensorInfo {
  name: string;
  /** ggml `ne`: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  type: GgmlType;
  /** Offset of the data relative to the start of the tensor data section. */
  offset: number;
  /** Bytes the data occupies, from the type's block size. */
  byteLength: number;
  /** Product of dims. */
  nElements: number;
}

/** Block geometry of a type: `blockSize` weights take `typeSize` bytes. */
export interface GgmlTypeTraits {
  name: string;
  blockSize: number;
  typeSize: number;
}

export const GGML_TYPE_TRAITS: Partial<Record<GgmlType, GgmlTypeTraits>> = {
  [GgmlType.F32]: { name: "F32", blockSize: 1, typeSize: 4 },
  [GgmlType.F16]: { name: "F16", blockSize: 1, typeSize: 2 },
  [GgmlType.BF16]: { name: "BF16", blockSize: 1, typeSize: 2 },
  [GgmlType.Q4_0]: { name: "Q4_0", blockSize: 32, typeSize: 2 + 16 },
  [GgmlType.Q4_1]: { name: "Q4_1", blockSize: 32, typeSize: 2 + 2 + 16 },
  [GgmlType.Q5_0]: { name: "Q5_0", blockSize: 32, typeSize: 2 + 4 + 16 },
  [GgmlType.Q5_1]: { name: "Q5_1", blockSize: 32, typeSize: 2 + 2 + 4 + 16 },
  [GgmlType.Q8_0]: { name: "Q8_0", blockSize: 32, typeSize: 2 + 32 },
  [GgmlType.Q8_1]: { name: "Q8_1", blockSize: 32, typeSize: 4 + 4 + 32 },
  [GgmlType.Q2_K]: { name: "Q2_K", blockSize: 256, typeSize: 16 + 64 + 2 + 2 },
  [GgmlType.Q3_K]: { name: "Q3_K", blockSize: 256, typeSize: 32 + 64 + 12 + 2 },
  [GgmlType.Q4_K]: { name: "Q4_K", blockSize: 256, typeSize: 2 + 2 + 12 + 128 },
  [GgmlType.Q5_K]: { name: "Q5_K", blockSize: 256, typeSize: 2 + 2 + 12 + 32 + 128 },
  [GgmlType.Q6_K]: { name: "Q6_K", blockSize: 256, typeSize: 128 + 64 + 16 + 2 },
  [GgmlType.Q8_K]: { name: "Q8_K", blockSize: 256, typeSize: 4 + 256 + 32 },
  [GgmlType.IQ4_NL]: { name: "IQ4_NL", blockSize: 32, typeSize: 2 + 16 },
  [GgmlType.IQ4_XS]: { name: "IQ4_XS", blockSize: 256, typeSize: 2 + 2 + 4 + 128 },
  // Known geometry only (files using them can be read and inspected, not dequantized).
  [GgmlType.IQ2_XXS]: { name: "IQ2_XXS", blockSize: 256, typeSize: 2 + 64 },
  [GgmlType.IQ2_XS]: { name: "IQ2_XS", blockSize: 256, typeSize: 2 + 64 + 8 },
  [GgmlType.IQ2_S]: { name: "IQ2_S", blockSize: 256, typeSize: 2 + 64 + 8 + 8 },
  [GgmlType.IQ3_XXS]: { name: "IQ3_XXS", blockSize: 256, typeSize: 2 + 96 },
  [GgmlType.IQ3_S]: { name: "IQ3_S", blockSize: 256, typeSize: 2 + 64 + 8 + 32 + 4 },
  [GgmlType.IQ1_S]: { name: "IQ1_S", blockSize: 256, typeSize: 2 + 32 + 16 },
  [GgmlType.IQ1_M]: { name: "IQ1_M", blockSize: 256, typeSize: 32 + 16 + 8 },
  [GgmlType.TQ1_0]: { name: "TQ1_0", blockSize: 256, typeSize: 48 + 4 + 2 },
  [GgmlType.TQ2_0]: { name: "TQ2_0", blockSize: 256, typeSize: 64 + 2 },
  [GgmlType.MXFP4]: { name: "MXFP4", blockSize: 32, typeSize: 1 + 16 },
  [GgmlType.I8]: { name: "I8", blockSize: 1, typeSize: 1 },
  [GgmlType.I16]: { name: "I16", blockSize: 1, typeSize: 2 },
  [GgmlType.I32]: { name: "I32", blockSize: 1, typeSize: 4 },
  [GgmlType.I64]: { name: "I64", blockSize: 1, typeSize: 8 },
  [GgmlType.F64]: { name: "F64", blockSize: 1, typeSize: 8 },
};

export const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Bad or unsupported GGUF input. The message names the file and the problem. */
export class GgufError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = "GgufError";
  }
}

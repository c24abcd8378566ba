/**
 * Seeded PRNG for the tiny models. Pure 32-bit integer arithmetic (no Math.random, no
 * transcendental functions) so the same seed gives the same bits on every machine.
 */

/** FNV-1a hash of a string, to derive one independent stream per tensor name. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** mulberry32: small, fast, good enough for test weights. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Stream for `name` under `seed`: tensors do not shift when others are added or removed. */
  static forName(seed: number, name: string): Prng {
    return new Prng((Math.imul(seed >>> 0, 0x9e3779b1) ^ hashString(name)) >>> 0);
  }

  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.nextU32() / 4294967296;
  }

  /**
   * Approximately standard normal: Irwin-Hall sum of 4 uniforms, rescaled to unit variance.
   * Exact arithmetic only (unlike Box-Muller), and bounded (|x| < 3.47), which suits weights.
   */
  normal(): number {
    const s = this.uniform() + this.uniform() + this.uniform() + this.uniform();
    return (s - 2) * 1.7320508075688772;
  }

  /**
   * Fills `out` with `mean + std * normal()`, exactly the values successive normal() calls
   * give, with the state kept in a local: the hot loop of multi-GB model generation.
   */
  fillNormal(out: Float32Array, std: number, mean = 0): void {
    let state = this.state;
    for (let i = 0; i < out.length; i++) {
      let s = 0;
      for (let k = 0; k < 4; k++) {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        s += ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      }
      out[i] = mean + std * ((s - 2) * 1.7320508075688772);
    }
    this.state = state;
  }
}

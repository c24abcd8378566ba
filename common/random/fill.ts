/** A deterministic pseudo-random fill in [-1, 1) (xorshift32), the same for a seed on every run. */
export function fill(n: number, seed: number): Float32Array {
  let x = seed >>> 0 || 1;
  return new Float32Array(n).map(() => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) / 2 ** 32) * 2 - 1;
  });
}

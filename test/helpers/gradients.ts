import assert from "node:assert/strict";

/** Two gradient maps (by LoRA tensor name) agree within 1e-5 of the gradients' scale, and are not all zero. */
export function assertGradientsClose(a: Map<string, Float32Array>, b: Map<string, Float32Array>, what: string): void {
  assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort(), what);
  let maxAbs = 0;
  let scale = 0;
  for (const [k, x] of a) {
    const y = b.get(k)!;
    for (let i = 0; i < x.length; i++) {
      maxAbs = Math.max(maxAbs, Math.abs(x[i] - y[i]));
      scale = Math.max(scale, Math.abs(y[i]));
    }
  }
  assert.ok(scale > 0, `${what}: the gradients are not all zero`);
  assert.ok(maxAbs <= 1e-5 * Math.max(1, scale), `${what}: max |Δ| ${maxAbs} (gradient scale ${scale})`);
}

/**
 * Generates the random-weight shape models the GPU proof measures, into the app's shape cache
 * (.cache/models), with the app's own generator: `node --import tsx scripts/gpu/shapes.ts SHAPE`.
 * proof.sh starts one per shape in parallel, so that doctor and the bench find them cached
 * (generation is single-threaded JS; three at once use three of the machine's cores).
 */
import { ensureShapeModel } from "../../models/tiny/shapeCache.js";

const shape = process.argv[2];
if (!shape) {
  console.error("usage: shapes.ts SHAPE");
  process.exit(2);
}
const t0 = performance.now();
const file = ensureShapeModel(shape, "q8_0");
console.log(`shape ${shape}: ${file} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

import assert from "node:assert/strict";
import fs from "node:fs";
import { test } from "node:test";
import { defaultThreads, SINGLE_THREAD_BELOW_BYTES } from "../../electron/core/inference/threads.js";
import { storiesModelPath } from "../helpers/cli.js";

test("small models evaluate on one thread by default; larger ones keep node-llama-cpp's default", (t) => {
  const stories = storiesModelPath();
  if (stories) assert.equal(defaultThreads(fs.statSync(stories).size), 1);
  else t.diagnostic("stories260K.gguf is missing: its size is not checked");
  assert.equal(defaultThreads(SINGLE_THREAD_BELOW_BYTES - 1), 1);
  assert.equal(defaultThreads(SINGLE_THREAD_BELOW_BYTES), undefined);
  assert.equal(defaultThreads(4 * 1024 ** 3), undefined);
});

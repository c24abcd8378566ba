// The core's path to the project's atomic writer (temp name, fsync, rename, fsync the directory).
// It lives in trainer/ so that the trainer and models/, which may not import the core, share it.
export { fsyncDir, writeFileAtomicSync, writeFileAtomicWith } from "../../../trainer/atomicFile.js";

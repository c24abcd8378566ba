export * from "./samples.js";
export * from "./tokenize.js";
export * from "./trainSteps.js";
export * from "./checkpoint.js";
export * from "./run.js";

export * from "../../models/samples/sample.js";
export * from "./tokenize.js";
export * from "./trainSteps.js";
export * from "./checkpoint.js";

export * from "./adamw.js";
export * from "./stateFile.js";

export * from "./adamw.js";
export * from "../../models/adapters/optimizerState.js";

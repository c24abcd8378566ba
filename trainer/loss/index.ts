export * from "./ppo.js";
export * from "./advantages.js";
export * from "./topk.js";

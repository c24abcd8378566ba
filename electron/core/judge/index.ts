export { judgeTurn, type JudgeOptions, type JudgeOutcome, type HintVote } from "./judge.js";
export { JudgeService, type JudgeServiceOptions, type BackendFactory } from "./service.js";
export { judgeBackendFactory, type JudgeSourceOptions } from "./sources.js";
export { EndpointJudgeBackend, LocalJudgeBackend, JudgeUnavailableError, type JudgeBackend, type Completion, type CompleteOptions } from "./backends.js";
export { lastBoxed, parseScore, majority, parseHint, selectHints, type Score } from "./votes.js";
export { prmMessages, hintMessages, type JudgeInput } from "./prompts.js";

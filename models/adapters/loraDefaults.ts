/**
 * A fresh adapter's rank and alpha when none is given: the app's settings, `clawrl train` and
 * the trainer itself start from these (no imports: the core reads them without loading tfjs).
 */
export const LORA_DEFAULTS = { rank: 16, alpha: 32 } as const;

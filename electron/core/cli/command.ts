import { parseArgs, type ParseArgsConfig } from "node:util";

/** One CLI option, in node:util parseArgs terms plus help text. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Shown in --help, e.g. "FILE" for `--out FILE`. */
  value?: string;
  description: string;
}

export interface CommandSpec {
  name: string;
  summary: string;
  /** Usage line after `clawrl <name>`, e.g. "FILE [--json]". */
  usage: string;
  options: Record<string, OptionSpec>;
  /** How many positional arguments are allowed. */
  positionals?: { min: number; max: number; names: string };
  run(args: ParsedArgs): Promise<number | void>;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** A user-facing error: printed as one line, exit code 1 (or `code`). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly code = 2,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly code = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}

export function parseCommandArgs(spec: CommandSpec, argv: string[]): ParsedArgs {
  const options: NonNullable<ParseArgsConfig["options"]> = {};
  for (const [name, o] of Object.entries(spec.options)) {
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    // node's messages are long and mention internals; keep the first sentence.
    const msg = (err as Error).message.split("\n")[0].replace(/\. To specify.*$/, "");
    throw new UsageError(msg);
  }
  const pos = spec.positionals ?? { min: 0, max: 0, names: "" };
  if (parsed.positionals.length < pos.min) throw new UsageError(`missing ${pos.names}`);
  if (parsed.positionals.length > pos.max) {
    throw new UsageError(`unexpected argument '${parsed.positionals[pos.max]}'`);
  }
  return { values: parsed.values as ParsedArgs["values"], positionals: parsed.positionals };
}

export function helpText(spec: CommandSpec): string {
  const lines = [`Usage: clawrl ${spec.name} ${spec.usage}`.trimEnd(), "", spec.summary, ""];
  const entries = Object.entries(spec.options);
  if (entries.length > 0) {
    lines.push("Options:");
    const rows = entries.map(([name, o]) => {
      const flag = `${o.short ? `-${o.short}, ` : ""}--${name}${o.value ? ` ${o.value}` : ""}`;
      return [flag, o.description] as const;
    });
    const width = Math.max(...rows.map(([f]) => f.length));
    for (const [f, d] of rows) lines.push(`  ${f.padEnd(width)}  ${d}`);
  }
  return lines.join("\n");
}

/** Typed accessors that turn bad values into one-line usage errors. */
export function stringOpt(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === "string" ? v : undefined;
}

export function requiredString(args: ParsedArgs, name: string): string {
  const v = stringOpt(args, name);
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

export function intOpt(args: ParsedArgs, name: string, min: number, max: number): number | undefined {
  const v = stringOpt(args, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${name} must be an integer, got '${v}'`);
  const n = Number(v);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function floatOpt(args: ParsedArgs, name: string, min: number, max: number): number | undefined {
  const v = stringOpt(args, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got '${v}'`);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function choiceOpt<T extends string>(args: ParsedArgs, name: string, choices: readonly T[]): T | undefined {
  const v = stringOpt(args, name);
  if (v === undefined) return undefined;
  if (!(choices as readonly string[]).includes(v)) {
    throw new UsageError(`--${name} must be one of ${choices.join(", ")}, got '${v}'`);
  }
  return v as T;
}

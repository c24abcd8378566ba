import { CliError, UsageError, helpText, parseCommandArgs } from "./command.js";
import { commands } from "./commands/index.js";

function topHelp(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  return [
    "Usage: clawrl <command> [options]",
    "",
    "ClawRL Desktop: a local assistant that learns from every conversation.",
    "",
    "Commands:",
    ...Object.entries(commands).map(([n, c]) => `  ${n.padEnd(width)}  ${c.summary}`),
    "",
    "Run 'clawrl <command> --help' for a command's options.",
  ].join("\n");
}

/** Runs the CLI; returns the exit code. Errors become one line on stderr, never a stack. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(topHelp());
    return name === undefined ? 2 : 0;
  }
  const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!entry) {
    console.error(`clawrl: unknown command '${name}' (see 'clawrl --help')`);
    return 2;
  }
  const spec = await entry.load();
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(helpText(spec));
    return 0;
  }
  try {
    const args = parseCommandArgs(spec, rest);
    const code = await spec.run(args);
    return code ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`clawrl ${name}: ${err.message} (see 'clawrl ${name} --help')`);
      return err.code;
    }
    if (err instanceof CliError) {
      console.error(`clawrl ${name}: ${err.message}`);
      return err.code;
    }
    // Any error with a message we wrote for users (e.g. GgufError) is shown as one line;
    // CLAWRL_DEBUG=1 shows the stack for developers.
    const e = err as Error;
    console.error(`clawrl ${name}: ${e?.message ?? String(err)}`);
    if (process.env.CLAWRL_DEBUG) console.error(e?.stack);
    return 1;
  }
}

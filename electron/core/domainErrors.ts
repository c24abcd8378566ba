/**
 * The core's named errors: what went wrong, in the domain's words, with no HTTP in them (modelled
 * on node-llama-cpp's named errors). Domain code throws these; the server maps each class to a
 * status and an OpenAI-style `type`/`code` in one table (server/errors.ts), and nothing else in
 * the core knows about HTTP.
 *
 * `code` is the machine-readable reason a client may branch on (e.g. "no_model"); `param` names
 * the request field at fault, where there is one.
 */
export interface DomainErrorOptions {
  code?: string | null;
  param?: string | null;
  cause?: unknown;
}

export abstract class DomainError extends Error {
  readonly code: string | null;
  readonly param: string | null;

  constructor(message: string, opts: DomainErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
  }
}

/** The caller asked for something malformed or contradictory (a bad header value, a prompt past the context). */
export class InvalidInputError extends DomainError {}

/** What the caller named does not exist (a session, a download, a checkpoint). */
export class NotFoundError extends DomainError {}

/** The request is fine but clashes with what is under way (a model switch, a running check). */
export class ConflictError extends DomainError {}

/** The input is well-formed but cannot be used (a model file refused before loading). */
export class UnusableInputError extends DomainError {}

/** What the request needs is not there now (no model loaded, learning off); it may be later. */
export class UnavailableError extends DomainError {}

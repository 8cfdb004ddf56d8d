import { z } from "zod";

/** A blank or whitespace-only variable counts as unset (so its default applies). */
export const blankAsUnset = (value: unknown): unknown =>
  typeof value === "string" && value.trim() === "" ? undefined : value;

/** A TCP port, 0 = any free port. */
export const portField = z.coerce.number().int().min(0).max(65535);

/** A whole number above 0. */
export const positiveIntField = z.coerce.number().int().positive();

/** An optional string; blank = unset. */
export const optionalStringField = z.preprocess(blankAsUnset, z.string().min(1).optional());

/** A whole number in [min, max], `fallback` when unset or blank; every failure says "must be <what>". */
export const intField = (min: number, max: number, fallback: number, what: string) =>
  z.preprocess(
    blankAsUnset,
    z.coerce
      .number({ error: `must be ${what}` })
      .int(`must be ${what}`)
      .min(min, `must be ${what}`)
      .max(max, `must be ${what}`)
      .default(fallback),
  );

/** A number in [min, max], `fallback` when unset or blank; every failure says "must be <what>". */
export const numberField = (min: number, max: number, fallback: number, what: string) =>
  z.preprocess(
    blankAsUnset,
    z.coerce
      .number({ error: `must be ${what}` })
      .min(min, `must be ${what}`)
      .max(max, `must be ${what}`)
      .default(fallback),
  );

export interface ConfigProblem {
  /** The environment variable, e.g. MEDIA_PORT. */
  variable: string;
  message: string;
}

/** A bad environment: the message names every offending variable ("MEDIA_PORT: must be ..."). */
export class ConfigError extends Error {
  constructor(readonly problems: ReadonlyArray<ConfigProblem>) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join("; ")}`);
    this.name = "ConfigError";
  }
}

/** One problem per zod issue, named by the variable (the issue's first path segment). */
export function configProblems(error: z.ZodError): ConfigProblem[] {
  return error.issues.map((issue) => ({ variable: String(issue.path[0] ?? "(env)"), message: issue.message }));
}

/** Parses `env` with `schema`; throws ConfigError naming each bad variable. */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) throw new ConfigError(configProblems(parsed.error));
  return parsed.data;
}

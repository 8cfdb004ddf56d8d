/**
 * pnpm run token --workspace <id> [--sub <user>] [--ttl 1h]
 * (`pnpm run`: a bare `pnpm token` is pnpm's own built-in command, which never reaches this script.)
 * Prints a bearer token that the management service accepts: signed with AUTH_JWT_SECRET, or with
 * the embedded secret in DATA_DIR (created here if the service has not started yet).
 */
import { parseArgs } from "node:util";
import jwt from "jsonwebtoken";
import { embeddedSecret, signToken } from "../auth/keys";
import { loadConfig } from "../config";

const USAGE =
  "usage: pnpm run token --workspace <id> [--sub <user>] [--ttl <duration, e.g. 1h, 30m, 12h; at most AUTH_MAX_TOKEN_LIFETIME_SECONDS>]";

function main(): number {
  let values;
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2).filter((a) => a !== "--"),
      options: {
        workspace: { type: "string", short: "w" },
        sub: { type: "string", short: "s" },
        ttl: { type: "string", short: "t", default: "1h" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.workspace) {
    process.stderr.write(`--workspace is required\n${USAGE}\n`);
    return 2;
  }
  const ttl = values.ttl ?? "1h";
  if (!/^[0-9]+(ms|s|m|h|d|w|y)?$/.test(ttl)) {
    process.stderr.write(`--ttl must be a duration such as 90s, 30m, 1h, 7d\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  if (config.auth.jwksUrl || config.auth.publicKey) {
    process.stderr.write(
      "AUTH_JWKS_URL / AUTH_PUBLIC_KEY is set: tokens come from your identity provider, not from here\n",
    );
    return 1;
  }
  const secret = config.auth.jwtSecret ?? embeddedSecret(config.dataDir)!;
  const token = signToken(secret, {
    workspaceId: values.workspace,
    sub: values.sub,
    ttl: /^[0-9]+$/.test(ttl) ? Number(ttl) : ttl,
    workspaceClaim: config.auth.workspaceClaim,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
  });
  // The service refuses tokens living longer than AUTH_MAX_TOKEN_LIFETIME_SECONDS: do not print one.
  const { exp, iat } = jwt.decode(token) as { exp: number; iat: number };
  const max = config.auth.maxTokenLifetimeSeconds;
  if (max > 0 && exp - iat > max) {
    process.stderr.write(
      `--ttl ${ttl} is longer than AUTH_MAX_TOKEN_LIFETIME_SECONDS (${max} s): the service would refuse it\n`,
    );
    return 2;
  }
  process.stdout.write(`${token}\n`);
  return 0;
}

try {
  process.exitCode = main();
} catch (err) {
  process.stderr.write(`token: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}

// The rule every deployment file is held to, for each service's environment:
//   1. every variable set is one the service knows: a key of its zod env schema (imported from
//      the service, so a renamed variable breaks this test), or one of a few runtime variables
//      (NODE_ENV, NODE_OPTIONS, TZ, LD_PRELOAD for jemalloc, UV_THREADPOOL_SIZE for libuv) — a typo such as S3_BUKET is reported, not ignored;
//   2. every variable of the production mode is set: the service's list below (each name is
//      itself checked against the schema), and exactly one of the auth key sources;
//   3. the whole environment passes the service's own loader (loadConfig / loadMediaConfig:
//      ranges, URL formats, cross-field rules such as "S3_BUCKET required for s3");
//   4. the loaded configuration is the production one: Postgres not PGlite, S3 not the
//      filesystem, Redis for the media cache.
import { managementEnvSchema, loadConfig, type ManagementConfig } from "../../../services/management/src/config";
import { loadMediaConfig, mediaEnvSchema, type MediaConfig } from "../../../services/media/src/config";
import { S3_CONNECTION_VARIABLES } from "../../../packages/storage/src";

export const RUNTIME_VARIABLES = ["NODE_ENV", "NODE_OPTIONS", "TZ", "LD_PRELOAD", "UV_THREADPOOL_SIZE"] as const;

/** Storage settings both services need in production (same bucket, same credentials). */
export const STORAGE_PRODUCTION = S3_CONNECTION_VARIABLES;

export type ServiceName = "management" | "media";

export interface ServiceRule {
  /** Package and folder: services/<name>. */
  name: ServiceName;
  packageName: string;
  schemaKeys: string[];
  portVariable: string;
  defaultPort: number;
  required: string[];
  /** Groups of which exactly one variable must be set. */
  exactlyOne: string[][];
  /** Loads the config with the service's own loader and returns production-mode problems. */
  productionProblems(env: Record<string, string>): string[];
}

function loaderProblems<T>(load: () => T, check: (config: T) => string[]): string[] {
  let config: T;
  try {
    config = load();
  } catch (err) {
    return [`the service's config loader rejects it: ${err instanceof Error ? err.message : String(err)}`];
  }
  return check(config);
}

export const SERVICES: Record<ServiceName, ServiceRule> = {
  management: {
    name: "management",
    packageName: "@media-platform/management",
    schemaKeys: Object.keys(managementEnvSchema.shape),
    portVariable: "MANAGEMENT_PORT",
    defaultPort: 3000,
    required: [
      "MANAGEMENT_PORT",
      "HOST",
      "DATA_DIR",
      "DATABASE_URL",
      "MEDIA_PUBLIC_URL",
      "LOG_LEVEL",
      ...STORAGE_PRODUCTION,
    ],
    exactlyOne: [["AUTH_JWKS_URL", "AUTH_JWT_SECRET", "AUTH_PUBLIC_KEY"]],
    productionProblems: (env) =>
      loaderProblems<ManagementConfig>(
        () => loadConfig(env),
        (c) => [
          ...(c.databaseUrl ? [] : ["database: PGlite (DATABASE_URL unset), not Postgres"]),
          ...(c.storage.STORAGE_DRIVER === "s3" ? [] : [`storage: ${c.storage.STORAGE_DRIVER}, not s3`]),
          ...(c.host === "0.0.0.0" || c.host === "::"
            ? []
            : [`HOST ${c.host} is not reachable from outside the container`]),
        ],
      ),
  },
  media: {
    name: "media",
    packageName: "@media-platform/media",
    schemaKeys: Object.keys(mediaEnvSchema.shape),
    portVariable: "MEDIA_PORT",
    defaultPort: 3001,
    required: ["MEDIA_PORT", "HOST", "REDIS_URL", "LOG_LEVEL", ...STORAGE_PRODUCTION],
    exactlyOne: [],
    productionProblems: (env) =>
      loaderProblems<MediaConfig>(
        () => loadMediaConfig(env),
        (c) => [
          ...(c.redis ? [] : ["cache: in-process only (REDIS_URL unset), not shared through Redis"]),
          ...(c.storage.STORAGE_DRIVER === "s3" ? [] : [`storage: ${c.storage.STORAGE_DRIVER}, not s3`]),
          ...(c.host === "0.0.0.0" || c.host === "::"
            ? []
            : [`HOST ${c.host} is not reachable from outside the container`]),
        ],
      ),
  },
};

/** Problems of one service's complete environment under the rule above; [] = fine. */
export function serviceEnvProblems(rule: ServiceRule, env: Record<string, string>): string[] {
  const problems: string[] = [];
  const known = new Set<string>([...rule.schemaKeys, ...RUNTIME_VARIABLES]);
  for (const key of Object.keys(env).sort()) {
    if (!known.has(key))
      problems.push(`${key}: not a variable of the ${rule.name} service (typo, or a setting it never reads)`);
  }
  const isSet = (k: string) => env[k] !== undefined && env[k].trim() !== "";
  for (const key of rule.required) {
    if (!rule.schemaKeys.includes(key))
      problems.push(`${key}: listed as required but the ${rule.name} env schema has no such variable`);
    else if (!isSet(key)) problems.push(`${key}: required in production, not set`);
  }
  for (const group of rule.exactlyOne) {
    const set = group.filter(isSet);
    if (set.length !== 1)
      problems.push(`exactly one of ${group.join(", ")} must be set (found ${set.length ? set.join(", ") : "none"})`);
  }
  if (problems.length === 0) problems.push(...rule.productionProblems(env));
  return problems;
}

import fs from "node:fs";
import path from "node:path";
import { SERVICES, STORAGE_PRODUCTION, serviceEnvProblems, type ServiceName } from "./env-rules";
import { imageEnv } from "./dockerfile-checks";
import { composeEnvironment, composePorts, interpolate, repoPath, type Json } from "./files";

/** Ports the infrastructure images listen on (their documented defaults). */
export const IMAGE_PORTS: Array<{ image: RegExp; port: number }> = [
  { image: /^postgres:/, port: 5432 },
  { image: /^redis:/, port: 6379 },
  { image: /^minio\/minio:/, port: 9000 },
];

const APP_SERVICES: ServiceName[] = ["management", "media"];

/** Secrets an operator must set in `.env`: compose has no default for them, so none is publicly known. */
export const REQUIRED_SECRETS: Record<ServiceName, string[]> = {
  management: ["AUTH_JWT_SECRET", "MEDIA_PURGE_SECRET"],
  media: ["MEDIA_PURGE_SECRET"],
};

/** The `.env` an operator writes beside docker-compose.yml: one value for each required secret. */
export const OPERATOR_ENV: Record<string, string> = {
  AUTH_JWT_SECRET: "operator-jwt-secret-0123456789abcdef0123456789",
  MEDIA_PURGE_SECRET: "operator-purge-secret-0123456789abcdef012345",
};

function dependsOn(service: Json): Record<string, Json> {
  const d = service?.depends_on;
  if (!d) return {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((n: string) => [n, {}]));
  return d;
}

/** The service's complete environment in the container: image ENV, then compose `environment`. */
export function composeServiceEnv(
  compose: Json,
  name: ServiceName,
  vars: Record<string, string> = OPERATOR_ENV,
): Record<string, string> {
  return { ...imageEnv(name), ...composeEnvironment(compose.services?.[name], vars) };
}

function isOneShot(service: Json): boolean {
  return service?.restart === "no" || service?.restart === false;
}

/** Internal port of a compose service: an app's port variable, or a known image's default. */
function internalPort(compose: Json, name: string): number | undefined {
  if ((APP_SERVICES as string[]).includes(name)) {
    const rule = SERVICES[name as ServiceName];
    return Number(composeServiceEnv(compose, name as ServiceName)[rule.portVariable]);
  }
  const image = String(compose.services?.[name]?.image ?? "");
  return IMAGE_PORTS.find((p) => p.image.test(image))?.port;
}

/** Checks a URL-valued variable points at a compose service, on the port that service listens on. */
function urlTargetProblems(compose: Json, from: string, variable: string, value: string | undefined): string[] {
  if (!value) return [];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [`${from}: ${variable}=${value} is not a URL`];
  }
  const host = url.hostname;
  if (!compose.services?.[host]) return [`${from}: ${variable} host ${host} is not a compose service`];
  const problems: string[] = [];
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const expected = internalPort(compose, host);
  if (expected !== undefined && port !== expected)
    problems.push(`${from}: ${variable} port ${port}, but ${host} listens on ${expected}`);
  const dep = dependsOn(compose.services[from])[host];
  if (!dep) problems.push(`${from}: uses ${host} (${variable}) without depends_on ${host}`);
  return problems;
}

/** A required secret must be set by the operator: `${VAR:?message}`, never a default or a literal. */
function requiredSecretProblems(service: Json, name: string, secret: string): string[] {
  const raw = service?.environment?.[secret];
  if (raw === undefined || raw === null) return [`${name}: ${secret} is not passed to the service`];
  const value = String(raw);
  if (!value.includes(`\${${secret}:?`)) return [`${name}: ${secret} has a default; it must be \${${secret}:?...}`];
  try {
    interpolate(value, {});
    return [`${name}: ${secret} starts without a value`];
  } catch {
    return [];
  }
}

/** Problems of a parsed docker-compose.yml; [] = fine. */
export function composeProblems(compose: Json): string[] {
  const problems: string[] = [];
  const services: Record<string, Json> = compose?.services ?? {};
  const want: Record<string, RegExp> = {
    postgres: /^postgres:16([.-]|$)/,
    redis: /^redis:7([.-]|$)/,
    minio: /^minio\/minio:/,
    "minio-init": /^minio\/mc:/,
  };
  for (const [name, image] of Object.entries(want)) {
    if (!services[name]) problems.push(`service ${name} missing`);
    else if (!image.test(String(services[name].image ?? "")))
      problems.push(`${name}: image ${services[name].image} does not match ${image}`);
  }
  for (const name of APP_SERVICES) {
    const s = services[name];
    if (!s) {
      problems.push(`service ${name} missing`);
      continue;
    }
    const dockerfile = s.build?.dockerfile;
    if (dockerfile !== `infra/docker/${name}.Dockerfile`)
      problems.push(`${name}: build.dockerfile ${dockerfile}, expected infra/docker/${name}.Dockerfile`);
    if (s.build?.context !== ".")
      problems.push(
        `${name}: build.context ${s.build?.context}, expected . (the Dockerfiles copy the whole workspace)`,
      );
    if (dockerfile && !fs.existsSync(repoPath(String(dockerfile))))
      problems.push(`${name}: ${dockerfile} does not exist`);
  }

  // Healthchecks everywhere except one-shot jobs; depends_on conditions that match.
  for (const [name, s] of Object.entries(services)) {
    const test = s.healthcheck?.test;
    if (isOneShot(s)) {
      if (test) problems.push(`${name}: one-shot job with a healthcheck`);
    } else if (!test || (Array.isArray(test) && (test.length < 2 || !["CMD", "CMD-SHELL"].includes(test[0])))) {
      problems.push(`${name}: no usable healthcheck`);
    } else if (s.healthcheck?.disable) problems.push(`${name}: healthcheck disabled`);
    for (const [dep, spec] of Object.entries(dependsOn(s))) {
      const target = services[dep];
      if (!target) {
        problems.push(`${name}: depends_on ${dep}, which is not a service`);
        continue;
      }
      const expected = isOneShot(target) ? "service_completed_successfully" : "service_healthy";
      if (spec?.condition !== expected)
        problems.push(`${name}: depends_on ${dep} with condition ${spec?.condition}, expected ${expected}`);
      if (target.profiles && !s.profiles)
        problems.push(`${name}: depends_on ${dep}, which only runs in profile(s) ${target.profiles}`);
    }
    for (const v of s.volumes ?? []) {
      const src = String(typeof v === "string" ? v.split(":")[0] : v.source);
      if (src.startsWith(".") || src.startsWith("/")) {
        if (!fs.existsSync(repoPath(src))) problems.push(`${name}: bind mount source ${src} does not exist`);
      } else if (!(compose.volumes && src in compose.volumes))
        problems.push(`${name}: named volume ${src} is not declared under volumes:`);
    }
  }

  // The two services' environments.
  const envs: Partial<Record<ServiceName, Record<string, string>>> = {};
  for (const name of APP_SERVICES) {
    if (!services[name]) continue;
    for (const secret of REQUIRED_SECRETS[name]) problems.push(...requiredSecretProblems(services[name], name, secret));
    const env = composeServiceEnv(compose, name);
    envs[name] = env;
    for (const p of serviceEnvProblems(SERVICES[name], env)) problems.push(`${name}: ${p}`);
    for (const variable of ["DATABASE_URL", "REDIS_URL", "S3_ENDPOINT"])
      problems.push(...urlTargetProblems(compose, name, variable, env[variable]));
    const rule = SERVICES[name];
    const ports = composePorts(services[name]);
    if (!ports.some((p) => p.container === Number(env[rule.portVariable])))
      problems.push(`${name}: no published port for ${rule.portVariable}=${env[rule.portVariable]}`);
    const hc: string[] = services[name].healthcheck?.test ?? [];
    if (hc[0] === "CMD" && hc[1] === "node" && hc[3] !== rule.portVariable)
      problems.push(`${name}: healthcheck reads port from ${hc[3]}, the service listens on ${rule.portVariable}`);
  }
  const m = envs.management;
  const media = envs.media;
  if (m && media) {
    for (const key of STORAGE_PRODUCTION) {
      if (m[key] !== media[key])
        problems.push(`storage differs: management ${key}=${m[key]}, media ${key}=${media[key]}`);
    }
    // mediaUrl must be reachable by the API's clients: the media service's published port on this host.
    try {
      const pub = new URL(m.MEDIA_PUBLIC_URL);
      const published = composePorts(services.media).find((p) => p.container === Number(media.MEDIA_PORT))?.host;
      if (!["localhost", "127.0.0.1"].includes(pub.hostname))
        problems.push(`MEDIA_PUBLIC_URL host ${pub.hostname}: clients outside compose cannot resolve it`);
      if (Number(pub.port || 80) !== published)
        problems.push(`MEDIA_PUBLIC_URL port ${pub.port}, media is published on ${published}`);
    } catch {
      problems.push(`MEDIA_PUBLIC_URL ${m.MEDIA_PUBLIC_URL} is not a URL`);
    }
    // Postgres credentials in DATABASE_URL are the ones the postgres container is created with.
    const pg = composeEnvironment(services.postgres);
    try {
      const u = new URL(m.DATABASE_URL);
      if (decodeURIComponent(u.username) !== pg.POSTGRES_USER)
        problems.push(`DATABASE_URL user ${u.username}, postgres has ${pg.POSTGRES_USER}`);
      if (decodeURIComponent(u.password) !== pg.POSTGRES_PASSWORD)
        problems.push("DATABASE_URL password differs from POSTGRES_PASSWORD");
      if (u.pathname.slice(1) !== pg.POSTGRES_DB)
        problems.push(`DATABASE_URL database ${u.pathname.slice(1)}, postgres creates ${pg.POSTGRES_DB}`);
    } catch {
      /* reported by the env rules */
    }
  }

  // Bucket init: same bucket and credentials as the services, against the minio service.
  const init = services["minio-init"];
  if (init && m) {
    const ie = composeEnvironment(init);
    const me = composeEnvironment(services.minio);
    if (ie.S3_BUCKET !== m.S3_BUCKET)
      problems.push(`minio-init creates bucket ${ie.S3_BUCKET}, services use ${m.S3_BUCKET}`);
    if (ie.S3_ACCESS_KEY_ID !== m.S3_ACCESS_KEY_ID || ie.S3_SECRET_ACCESS_KEY !== m.S3_SECRET_ACCESS_KEY)
      problems.push("minio-init creates other S3 credentials than the services use");
    if (ie.MINIO_ROOT_USER !== me.MINIO_ROOT_USER || ie.MINIO_ROOT_PASSWORD !== me.MINIO_ROOT_PASSWORD)
      problems.push("minio-init root credentials differ from minio's");
    problems.push(...urlTargetProblems(compose, "minio-init", "MINIO_URL", ie.MINIO_URL));
    const entry: string[] = Array.isArray(init.entrypoint)
      ? init.entrypoint
      : String(init.entrypoint ?? "").split(/\s+/);
    const script = entry.find((a) => a.endsWith(".sh"));
    const mount = (init.volumes ?? [])
      .map((v: string) => String(v).split(":"))
      .find(([, target]: string[]) => script?.startsWith(`${target}/`));
    if (!script || !mount) problems.push(`minio-init: entrypoint script ${script} is not inside a bind mount`);
    else if (!fs.existsSync(repoPath(mount[0], path.posix.relative(mount[1], script))))
      problems.push(`minio-init: ${script} does not exist on the host`);
  }

  // Optional CDN: the nginx config proxies to the media service's internal port.
  const cdn = services.cdn;
  if (cdn && media) {
    const mount = (cdn.volumes ?? [])
      .map((v: string) => String(v).split(":"))
      .find(([src]: string[]) => src.endsWith("nginx.conf"));
    if (!mount) problems.push("cdn: nginx.conf not mounted");
    else {
      const conf = fs.readFileSync(repoPath(mount[0]), "utf8");
      const servers = [...conf.matchAll(/^\s*server\s+([^\s;:]+):(\d+)/gm)].map((x) => ({
        host: x[1],
        port: Number(x[2]),
      }));
      if (servers.length === 0) problems.push("cdn: nginx.conf has no upstream server");
      for (const s of servers) {
        if (!services[s.host]) problems.push(`cdn: upstream host ${s.host} is not a compose service`);
        else if (s.port !== internalPort(compose, s.host))
          problems.push(`cdn: upstream ${s.host}:${s.port}, ${s.host} listens on ${internalPort(compose, s.host)}`);
      }
    }
  }
  return problems;
}

export { interpolate };

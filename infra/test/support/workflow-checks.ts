import fs from "node:fs";
import { SERVICES, STORAGE_PRODUCTION } from "./env-rules";
import { repoPath, type Json } from "./files";

export const WORKFLOW = ".github/workflows/ci.yml";

/** Variables the test suite itself reads (besides the services' own). */
export const TEST_VARIABLES = ["REQUIRE_SERVICES", "CHROMIUM_PATH"];

/** GitHub `${{ env.X }}` / `${{ secrets.X }}` are not evaluated here; plain values only. */
const plain = (env: Record<string, unknown> = {}): Record<string, string> =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));

function hostPort(mapping: string): { host: number; container: number } {
  const parts = String(mapping).split(":").map(Number);
  return { host: parts[parts.length - 2], container: parts[parts.length - 1] };
}

/** Problems of the parsed workflow; [] = fine. */
export function workflowProblems(wf: Json): string[] {
  const problems: string[] = [];
  const on = wf?.on ?? wf?.true; // YAML 1.1 readers turn `on` into true
  if (!on || (!("push" in on) && !("pull_request" in on))) problems.push("not triggered on push/pull_request");
  const jobs: Record<string, Json> = wf?.jobs ?? {};
  const job = Object.values(jobs).find((j) => (j.steps ?? []).some((s: Json) => /\bpnpm test\b/.test(s.run ?? "")));
  if (!job) return [...problems, "no job runs `pnpm test`"];
  const steps: Json[] = job.steps ?? [];
  const wfEnv = plain(wf.env);
  const jobEnv = { ...wfEnv, ...plain(job.env) };

  const services: Record<string, Json> = job.services ?? {};
  const pg = Object.values(services).find((s) => /^postgres:16([.-]|$)/.test(String(s.image)));
  const redis = Object.values(services).find((s) => /^redis:7([.-]|$)/.test(String(s.image)));
  if (!pg) problems.push("no postgres:16 service container");
  if (!redis) problems.push("no redis:7 service container");
  for (const [name, s] of Object.entries(services)) {
    if (!/--health-cmd/.test(String(s.options ?? "")))
      problems.push(`service ${name}: no --health-cmd (steps could start before it is ready)`);
  }

  const uses = (re: RegExp) => steps.findIndex((s) => re.test(String(s.uses ?? "")));
  const nodeIdx = uses(/^actions\/setup-node@/);
  if (nodeIdx < 0) problems.push("no actions/setup-node");
  else {
    const v = String(steps[nodeIdx].with?.["node-version"] ?? "");
    if (!/^24(\.|$|\.x)/.test(v)) problems.push(`node-version ${v}, expected 24 (LTS)`);
    const pnpmIdx = uses(/^pnpm\/action-setup@/);
    if (pnpmIdx < 0) problems.push("no pnpm/action-setup");
    else if (steps[nodeIdx].with?.cache === "pnpm" && pnpmIdx > nodeIdx)
      problems.push("setup-node caches pnpm before pnpm is installed");
  }
  const runIdx = (re: RegExp) => steps.map((s, i) => (re.test(String(s.run ?? "")) ? i : -1)).filter((i) => i >= 0);
  const install = runIdx(/\bpnpm install --frozen-lockfile\b/);
  if (install.length === 0) problems.push("no `pnpm install --frozen-lockfile`");
  const tests = runIdx(/^\s*pnpm test\s*$/);
  if (tests.length !== 2)
    problems.push(`\`pnpm test\` runs ${tests.length} times, expected 2 (embedded, then with services)`);
  if (install.length && tests.some((t) => t < install[0])) problems.push("tests run before install");

  const minioStep = steps.findIndex((s) =>
    /docker run[\s\S]*minio\/minio:\S+[\s\S]*\bserver\b/.test(String(s.run ?? "")),
  );
  const minioService = Object.values(services).find((s) => /^minio\/minio/.test(String(s.image)));
  if (minioStep < 0 && !minioService) problems.push("MinIO is not started");
  if (tests.length === 2) {
    const [first, second] = tests.map((i) => ({ ...jobEnv, ...plain(steps[i].env) }));
    for (const k of ["DATABASE_URL", "REDIS_URL", "STORAGE_DRIVER", "S3_ENDPOINT", "REQUIRE_SERVICES"])
      if (first[k] !== undefined) problems.push(`the embedded run sets ${k}`);
    if (second.REQUIRE_SERVICES !== "1") problems.push("the services run does not set REQUIRE_SERVICES=1");
    if (second.STORAGE_DRIVER !== "s3") problems.push("the services run does not use STORAGE_DRIVER=s3");
    const known = new Set([
      ...SERVICES.management.schemaKeys,
      ...SERVICES.media.schemaKeys,
      ...TEST_VARIABLES,
      "MINIO_ROOT_USER",
      "MINIO_ROOT_PASSWORD",
    ]);
    for (const k of Object.keys(second))
      if (!known.has(k)) problems.push(`the services run sets ${k}, which nothing reads`);
    for (const k of STORAGE_PRODUCTION) if (!second[k]) problems.push(`the services run does not set ${k}`);
    const ports = (s: Json | undefined) => (s?.ports ?? []).map(hostPort);
    const checkUrl = (variable: string, svc: Json | undefined, internal: number): URL | undefined => {
      if (!second[variable]) {
        problems.push(`the services run does not set ${variable}`);
        return undefined;
      }
      const u = new URL(second[variable]);
      if (!["127.0.0.1", "localhost"].includes(u.hostname))
        problems.push(`${variable} host ${u.hostname}: service containers are reached on localhost`);
      if (
        svc &&
        !ports(svc).some(
          (p: { host: number; container: number }) => p.host === Number(u.port) && p.container === internal,
        )
      )
        problems.push(`${variable} port ${u.port} is not mapped to the service container's ${internal}`);
      return u;
    };
    const db = checkUrl("DATABASE_URL", pg, 5432);
    checkUrl("REDIS_URL", redis, 6379);
    if (db && pg) {
      const e = plain(pg.env);
      if (
        decodeURIComponent(db.username) !== e.POSTGRES_USER ||
        decodeURIComponent(db.password) !== e.POSTGRES_PASSWORD
      )
        problems.push("DATABASE_URL credentials differ from the postgres service's");
    }
    if (second.S3_ENDPOINT) {
      const s3 = new URL(second.S3_ENDPOINT);
      const run = minioStep >= 0 ? String(steps[minioStep].run) : "";
      if (minioStep >= 0 && !new RegExp(`-p\\s+${s3.port}:9000\\b`).test(run))
        problems.push(`S3_ENDPOINT port ${s3.port} is not where MinIO is published`);
      const user = jobEnv.MINIO_ROOT_USER;
      const pass = jobEnv.MINIO_ROOT_PASSWORD;
      if (second.S3_ACCESS_KEY_ID !== user || second.S3_SECRET_ACCESS_KEY !== pass)
        problems.push("S3 credentials differ from MinIO's root credentials");
      const bucketCreated = steps.some(
        (s) =>
          String(s.run ?? "").includes("create-bucket.sh") && String(s.run).includes(`S3_BUCKET=${second.S3_BUCKET}`),
      );
      if (!bucketCreated) problems.push(`bucket ${second.S3_BUCKET} is never created`);
    }
    // Each service accepts the run's variables (so a bad value fails here, not on GitHub).
    for (const rule of Object.values(SERVICES)) {
      const env = Object.fromEntries(Object.entries(second).filter(([k]) => rule.schemaKeys.includes(k)));
      const p = rule.productionProblems(env).filter((x) => !x.startsWith("HOST") && !x.startsWith("database:"));
      problems.push(...p.map((x) => `${rule.name} with the services run's env: ${x}`));
    }
  }
  for (const s of steps) {
    const m = /-v\s+"?\$PWD\/([^:"]+):([^:"]+)/.exec(String(s.run ?? ""));
    if (m && !fs.existsSync(repoPath(m[1]))) problems.push(`step mounts ${m[1]}, which does not exist`);
  }
  return problems;
}

import fs from "node:fs";
import path from "node:path";
import { DEFAULT_MIGRATIONS_DIR } from "../../../services/management/src/db/migrate";
import { SERVICES, type ServiceName } from "./env-rules";
import {
  REPO,
  dockerignoreMatcher,
  execForm,
  parseDockerfile,
  readRepoFile,
  repoPath,
  resolveFrom,
  stageEnv,
  type Dockerfile,
  type Stage,
} from "./files";

export const dockerfilePath = (service: ServiceName): string => `infra/docker/${service}.Dockerfile`;

/** Where the service's folder lives in the image (mirrors the repository layout). */
export const imageServiceDir = (service: ServiceName): string => `/app/services/${service}`;

export function finalStage(df: Dockerfile): Stage {
  return df.stages[df.stages.length - 1];
}

/** Where the runtime stage links Debian's libjemalloc2 (the same path on every architecture). */
export const JEMALLOC_PATH = "/usr/local/lib/libjemalloc.so.2";

/** The runtime image's own ENV (defaults that compose / k8s environments add to). */
export function imageEnv(service: ServiceName, text = readRepoFile(dockerfilePath(service))): Record<string, string> {
  return stageEnv(finalStage(parseDockerfile(text)));
}

const NODE_MAJOR = 24;

/** Problems of one service's Dockerfile; [] = fine. `text` defaults to the file in the repo. */
export function dockerfileProblems(
  service: ServiceName,
  text: string = readRepoFile(dockerfilePath(service)),
  dockerignore: string = readRepoFile(".dockerignore"),
): string[] {
  const rule = SERVICES[service];
  const problems: string[] = [];
  let df: Dockerfile;
  try {
    df = parseDockerfile(text);
  } catch (err) {
    return [`does not parse: ${String(err)}`];
  }
  if (df.stages.length < 2) problems.push(`not multi-stage: ${df.stages.length} FROM`);
  const names = new Set<string>();
  for (const stage of df.stages) {
    if (stage.name) {
      if (names.has(stage.name)) problems.push(`stage name ${stage.name} used twice`);
      names.add(stage.name);
    }
    if (names.has(stage.from) && stage.from !== stage.name) continue; // FROM <earlier stage>
    let image: string;
    try {
      image = resolveFrom(df, stage);
    } catch (err) {
      problems.push(String(err));
      continue;
    }
    const m = /^(?:docker\.io\/(?:library\/)?)?node:(\d+)(?:[.-][\w.-]*)?$/.exec(image);
    if (!m) problems.push(`FROM ${image}: not an official Node.js image`);
    else if (Number(m[1]) !== NODE_MAJOR) problems.push(`FROM ${image}: Node ${m[1]}, expected Node ${NODE_MAJOR} LTS`);
  }
  const all = df.stages.flatMap((s) => s.instructions);
  // COPY --from must name an earlier stage; COPY sources from the context must exist and not be dockerignored.
  const ignored = dockerignoreMatcher(dockerignore);
  df.stages.forEach((stage, idx) => {
    const earlier = new Set(
      df.stages
        .slice(0, idx)
        .map((s) => s.name)
        .filter(Boolean) as string[],
    );
    for (const ins of stage.instructions.filter((i) => i.keyword === "COPY" || i.keyword === "ADD")) {
      const tokens = ins.args.split(/\s+/);
      const flags = tokens.filter((t) => t.startsWith("--"));
      const rest = tokens.filter((t) => !t.startsWith("--"));
      const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
      if (from) {
        if (!earlier.has(from)) problems.push(`line ${ins.line}: COPY --from=${from} is not an earlier stage`);
        continue;
      }
      for (const src of rest.slice(0, -1)) {
        if (src === "." || src === "./") continue;
        if (!fs.existsSync(repoPath(src))) problems.push(`line ${ins.line}: COPY source ${src} does not exist`);
        else if (ignored(src)) problems.push(`line ${ins.line}: COPY source ${src} is excluded by .dockerignore`);
      }
    }
  });
  for (const mustIgnore of [
    ".git",
    "node_modules",
    "services/management/node_modules",
    ".data",
    "services/media/.data",
  ]) {
    if (!ignored(mustIgnore)) problems.push(`.dockerignore does not exclude ${mustIgnore}`);
  }
  for (const mustKeep of [
    "pnpm-lock.yaml",
    "package.json",
    "prisma/generate.cjs",
    "prisma/migrations",
    `services/${service}/src/index.ts`,
    "infra/docker/healthcheck.cjs",
  ]) {
    if (ignored(mustKeep)) problems.push(`.dockerignore excludes ${mustKeep}, which the build needs`);
  }

  // pnpm: the lockfile, frozen; the same pnpm as packageManager.
  const pkg = JSON.parse(readRepoFile("package.json")) as { packageManager?: string };
  const pnpmVersion = /^pnpm@([^+]+)/.exec(pkg.packageManager ?? "")?.[1];
  const pnpmArg = all.find((i) => i.keyword === "ARG" && i.args.startsWith("PNPM_VERSION="));
  if (!pnpmArg) problems.push("no ARG PNPM_VERSION");
  else if (pnpmArg.args.split("=")[1] !== pnpmVersion)
    problems.push(`PNPM_VERSION ${pnpmArg.args.split("=")[1]} differs from packageManager pnpm@${pnpmVersion}`);
  const runs = all.filter((i) => i.keyword === "RUN").map((i) => i.args);
  const installIdx = runs.findIndex((r) => /\bpnpm install\b[^&]*--frozen-lockfile/.test(r));
  if (installIdx < 0) problems.push("no `pnpm install --frozen-lockfile`");
  const deployIdx = runs.findIndex((r) => /\bpnpm deploy\b/.test(r));
  if (deployIdx < 0) problems.push("no pruned production install (`pnpm deploy`)");
  else {
    const deploy = runs[deployIdx];
    const filter = /--filter[= ](\S+)/.exec(deploy)?.[1];
    if (filter !== rule.packageName) problems.push(`pnpm deploy --filter ${filter}, expected ${rule.packageName}`);
    if (!/--prod\b/.test(deploy)) problems.push("pnpm deploy without --prod");
    if (deployIdx < installIdx) problems.push("pnpm deploy runs before pnpm install");
  }
  if (service === "management") {
    const genIdx = runs.findIndex((r) => /\bnode prisma\/generate\.cjs\b/.test(r));
    if (genIdx < 0) problems.push("Prisma client not generated (`node prisma/generate.cjs`)");
    else if (deployIdx >= 0 && genIdx > deployIdx)
      problems.push("Prisma client generated after pnpm deploy (the deploy would miss it)");
  }

  // Runtime stage.
  const last = finalStage(df);
  const lastIns = last.instructions;
  const env = stageEnv(last);
  const users = lastIns.filter((i) => i.keyword === "USER");
  const user = users[users.length - 1]?.args.split(":")[0];
  if (!user) problems.push("runtime stage has no USER (runs as root)");
  else if (user === "root" || user === "0") problems.push(`runtime USER is ${user}`);
  const cmdIns = lastIns.filter((i) => i.keyword === "CMD").pop();
  const userIdx = users.length ? lastIns.indexOf(users[users.length - 1]) : -1;
  if (cmdIns && userIdx > lastIns.indexOf(cmdIns)) problems.push("USER comes after CMD");
  const cmd = cmdIns ? execForm(cmdIns.args) : null;
  if (!cmd || cmd.join(" ") !== "node --import tsx src/index.ts")
    problems.push(`CMD ${cmdIns?.args}: expected ["node","--import","tsx","src/index.ts"]`);
  const workdirs = lastIns.filter((i) => i.keyword === "WORKDIR");
  const workdir = workdirs[workdirs.length - 1]?.args;
  if (workdir !== imageServiceDir(service))
    problems.push(`runtime WORKDIR ${workdir}, expected ${imageServiceDir(service)}`);
  if (!fs.existsSync(repoPath(`services/${service}/src/index.ts`)))
    problems.push(`services/${service}/src/index.ts (the CMD) does not exist`);
  const svcPkg = JSON.parse(readRepoFile(`services/${service}/package.json`)) as {
    dependencies?: Record<string, string>;
  };
  if (!svcPkg.dependencies?.tsx)
    problems.push(
      `CMD needs tsx at run time but it is not in services/${service}/package.json dependencies (pnpm deploy --prod drops devDependencies)`,
    );
  const copiesService = lastIns.some(
    (i) => i.keyword === "COPY" && /--from=\S+/.test(i.args) && i.args.trim().endsWith(` ${imageServiceDir(service)}`),
  );
  if (!copiesService) problems.push(`runtime stage does not COPY the deploy output to ${imageServiceDir(service)}`);

  const port = env[rule.portVariable];
  if (port !== String(rule.defaultPort))
    problems.push(`ENV ${rule.portVariable}=${port}, expected ${rule.defaultPort}`);
  const expose = lastIns
    .filter((i) => i.keyword === "EXPOSE")
    .flatMap((i) => i.args.split(/\s+/).map((p) => p.replace(/\/tcp$/, "")));
  if (!expose.includes(String(port)))
    problems.push(`EXPOSE ${expose.join(" ")} does not include ${rule.portVariable}=${port}`);
  if (env.HOST !== "0.0.0.0") problems.push(`ENV HOST=${env.HOST}: must listen on all interfaces in a container`);

  // jemalloc (Debian's libjemalloc2) preloaded: glibc malloc fragments around libvips.
  const installsJemalloc = lastIns.some(
    (i) =>
      i.keyword === "RUN" && /apt-get install\b[^&]*\blibjemalloc2\b/.test(i.args) && i.args.includes(JEMALLOC_PATH),
  );
  if (!installsJemalloc)
    problems.push(`runtime stage does not install libjemalloc2 (apt-get) and link it at ${JEMALLOC_PATH}`);
  if (env.LD_PRELOAD !== JEMALLOC_PATH) problems.push(`ENV LD_PRELOAD=${env.LD_PRELOAD}, expected ${JEMALLOC_PATH}`);

  const hc = lastIns.filter((i) => i.keyword === "HEALTHCHECK").pop();
  if (!hc) problems.push("runtime stage has no HEALTHCHECK");
  else {
    const m = /^((?:--\S+\s+)*)CMD\s+([\s\S]+)$/.exec(hc.args);
    const form = m ? execForm(m[2]) : null;
    if (!form) problems.push(`HEALTHCHECK ${hc.args}: expected the exec form CMD ["node", ...]`);
    else {
      if (form[0] !== "node") problems.push(`HEALTHCHECK runs ${form[0]}, not node (slim images have no curl/wget)`);
      if (form[1] !== "/app/healthcheck.cjs")
        problems.push(`HEALTHCHECK script ${form[1]}, expected /app/healthcheck.cjs`);
      if (form[2] !== rule.portVariable)
        problems.push(`HEALTHCHECK reads port from ${form[2]}, the service listens on ${rule.portVariable}`);
      if (form[3] !== "/healthz") problems.push(`HEALTHCHECK path ${form[3]}, expected /healthz`);
    }
    const copied = lastIns.some(
      (i) => i.keyword === "COPY" && /infra\/docker\/healthcheck\.cjs\s+\/app\/healthcheck\.cjs$/.test(i.args),
    );
    if (!copied) problems.push("runtime stage does not COPY infra/docker/healthcheck.cjs to /app/healthcheck.cjs");
  }

  if (service === "management") {
    // The migration runner resolves prisma/migrations relative to its source file; the image
    // must keep that relation (service at /app/services/management, migrations at /app/prisma).
    const rel = path.relative(REPO, DEFAULT_MIGRATIONS_DIR).split(path.sep).join("/");
    const target = `/app/${rel}`;
    const copiesMigrations = lastIns.some((i) => i.keyword === "COPY" && i.args.trim().endsWith(` ${target}`));
    if (!copiesMigrations)
      problems.push(`runtime stage does not COPY the migrations to ${target} (where src/db/migrate.ts looks)`);
    if (env.DATA_DIR === undefined) problems.push("ENV DATA_DIR not set");
    else if (!lastIns.some((i) => i.keyword === "RUN" && i.args.includes(env.DATA_DIR) && /chown/.test(i.args)))
      problems.push(`DATA_DIR ${env.DATA_DIR} is not created writable for the runtime user`);
  }
  return problems;
}

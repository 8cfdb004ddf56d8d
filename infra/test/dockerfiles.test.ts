import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { SERVICES, serviceEnvProblems, type ServiceName } from "./support/env-rules";
import { dockerfilePath, dockerfileProblems, imageEnv } from "./support/dockerfile-checks";
import {
  dockerignoreMatcher,
  execForm,
  parseDockerfile,
  parseYamlStrict,
  readRepoFile,
  repoPath,
} from "./support/files";

const SERVICE_NAMES: ServiceName[] = ["management", "media"];
const text = (s: ServiceName) => readRepoFile(dockerfilePath(s));

describe.each(SERVICE_NAMES)("infra/docker/%s.Dockerfile", (service) => {
  test("passes every check: multi-stage Node 24, frozen pnpm install, pruned deploy, non-root USER, node HEALTHCHECK, CMD, ports, jemalloc", () => {
    expect(dockerfileProblems(service)).toEqual([]);
  });

  test("the image's own ENV holds only variables the service knows", () => {
    const env = imageEnv(service);
    const problems = serviceEnvProblems(SERVICES[service], env).filter((p) => p.includes("not a variable"));
    expect(problems).toEqual([]);
    expect(env[SERVICES[service].portVariable]).toBe(String(SERVICES[service].defaultPort));
  });

  const breakages: Array<[string, (t: string) => string, RegExp]> = [
    [
      "a single stage",
      (t) => `ARG NODE_IMAGE=node:24-bookworm-slim\n${t.slice(t.indexOf("FROM ${NODE_IMAGE} AS runtime"))}`,
      /not multi-stage: 1 FROM/,
    ],
    ["no USER", (t) => t.replace(/^USER node$/m, ""), /runtime stage has no USER/],
    ["USER root", (t) => t.replace(/^USER node$/m, "USER root"), /runtime USER is root/],
    ["no HEALTHCHECK", (t) => t.replace(/^HEALTHCHECK[\s\S]*?\]\n/m, ""), /no HEALTHCHECK/],
    [
      "a curl HEALTHCHECK",
      (t) =>
        t.replace(/CMD \["node", "\/app\/healthcheck.cjs"[^\n]*/, 'CMD ["curl", "-f", "http://127.0.0.1/healthz"]'),
      /HEALTHCHECK runs curl, not node/,
    ],
    ["Node 20", (t) => t.replace("node:24-bookworm-slim", "node:20-bookworm-slim"), /Node 20, expected Node 24/],
    [
      "an unfrozen install",
      (t) => t.replace("pnpm install --frozen-lockfile", "pnpm install"),
      /no `pnpm install --frozen-lockfile`/,
    ],
    ["no --prod deploy", (t) => t.replace(/ --prod /, " "), /pnpm deploy without --prod/],
    [
      "a deploy of another package",
      (t) => t.replace(/--filter @media-platform\/\w+/, "--filter @media-platform/contracts"),
      /pnpm deploy --filter @media-platform\/contracts/,
    ],
    [
      "COPY --from an unknown stage",
      (t) => t.replace("COPY --from=build ", "COPY --from=builder "),
      /COPY --from=builder is not an earlier stage/,
    ],
    [
      "a context file that does not exist",
      (t) => t.replace("infra/docker/healthcheck.cjs /app", "infra/docker/health.cjs /app"),
      /COPY source infra\/docker\/health.cjs does not exist/,
    ],
    [
      "another pnpm than packageManager",
      (t) => t.replace(/PNPM_VERSION=[\d.]+/, "PNPM_VERSION=9.0.0"),
      /PNPM_VERSION 9.0.0 differs from packageManager/,
    ],
    ["no jemalloc", (t) => t.replace(/ libjemalloc2 /, " "), /does not install libjemalloc2/],
    [
      "no LD_PRELOAD",
      (t) => t.replace(/^ {4}LD_PRELOAD=\S+ \\\n/m, ""),
      /ENV LD_PRELOAD=undefined, expected \/usr\/local\/lib\/libjemalloc\.so\.2/,
    ],
    ["EXPOSE on another port", (t) => t.replace(/^EXPOSE \d+$/m, "EXPOSE 8080"), /EXPOSE 8080 does not include/],
    [
      "a shell-form CMD",
      (t) => t.replace(/^CMD \[.*\]$/m, "CMD node dist/index.js"),
      /expected \["node","dist\/index.js"\]/,
    ],
    [
      "TypeScript run through tsx",
      (t) => t.replace(/^CMD \[.*\]$/m, 'CMD ["node", "--import", "tsx", "src/index.ts"]'),
      /expected \["node","dist\/index.js"\]/,
    ],
    ["no build", (t) => t.replace(/^RUN pnpm build \w+\n/m, ""), /no `pnpm build/],
  ];
  test.each(breakages)("the checks catch %s", (_name, breakIt, expected) => {
    const broken = breakIt(text(service));
    expect(broken).not.toBe(text(service));
    expect(dockerfileProblems(service, broken).join("\n")).toMatch(expected);
  });
});

test("management: Prisma client generated before the deploy, migrations where the runner looks", () => {
  const t = readRepoFile(dockerfilePath("management"));
  expect(dockerfileProblems("management", t.replace("RUN node prisma/generate.cjs\n", ""))).toContain(
    "Prisma client not generated (`node prisma/generate.cjs`)",
  );
  expect(
    dockerfileProblems(
      "management",
      t.replace(/COPY --from=build \/app\/prisma\/migrations \/app\/prisma\/migrations\n/, ""),
    ).join("\n"),
  ).toMatch(/does not COPY the migrations to \/app\/prisma\/migrations/);
});

test("the Dockerfile parser joins continuations and reads ENV/exec forms", () => {
  const df = parseDockerfile(
    'ARG X=node:24\nFROM ${X} AS a\nENV A=1 \\\n  B="two words"\n# c\nFROM a\nCMD ["node", "x"]\n',
  );
  expect(df.args).toEqual({ X: "node:24" });
  expect(df.stages.map((s) => [s.from, s.name])).toEqual([
    ["${X}", "a"],
    ["a", undefined],
  ]);
  expect(df.stages[0].instructions[0]).toMatchObject({ keyword: "ENV", args: 'A=1    B="two words"' });
  expect(execForm('["node", "x"]')).toEqual(["node", "x"]);
  expect(execForm("node x")).toBeNull();
});

describe(".dockerignore", () => {
  const ignored = dockerignoreMatcher(readRepoFile(".dockerignore"));
  test("keeps local state and dependencies out of the build context, keeps what the build needs", () => {
    for (const p of [
      ".git/HEAD",
      "node_modules/x",
      "services/media/node_modules/sharp",
      ".data/pg",
      "services/management/.data/x",
      "services/management/src/generated/prisma/client.ts",
      "fixtures/images/astronaut.png",
      ".env",
    ])
      expect([p, ignored(p)]).toEqual([p, true]);
    for (const p of [
      "package.json",
      "pnpm-lock.yaml",
      "pnpm-workspace.yaml",
      "prisma/migrations",
      "prisma/generate.cjs",
      "services/media/src/index.ts",
      "packages/storage/src/testing/s3rver.ts",
      "infra/docker/healthcheck.cjs",
    ])
      expect([p, ignored(p)]).toEqual([p, false]);
  });
  test("matcher semantics", () => {
    const m = dockerignoreMatcher("**/node_modules\n*.md\n!README.md\ndocs/*/draft\n");
    expect(m("a/b/node_modules/c")).toBe(true);
    expect(m("x.md")).toBe(true);
    expect(m("README.md")).toBe(false);
    expect(m("docs/a/draft")).toBe(true);
    expect(m("docs/a/b/draft")).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// The health probe the images and compose run, executed for real against local servers.

function runProbe(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [repoPath("infra/docker/healthcheck.cjs"), ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stderr, ms: Date.now() - started }));
  });
}

describe("infra/docker/healthcheck.cjs", () => {
  let server: http.Server;
  let port: number;
  const seen: string[] = [];
  let status = 200;
  let hang = false;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.url ?? "");
      if (hang) return; // never answers
      res.writeHead(status, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    seen.length = 0;
    status = 200;
    hang = false;
  });

  test.each(SERVICE_NAMES)(
    "the %s image's HEALTHCHECK command succeeds against a healthy service on its port variable",
    async (service) => {
      const df = parseDockerfile(readRepoFile(dockerfilePath(service)));
      const hc = df.stages[df.stages.length - 1].instructions.find((i) => i.keyword === "HEALTHCHECK");
      const cmd = execForm(/CMD\s+(\[[\s\S]*\])$/.exec(hc?.args ?? "")?.[1] ?? "null") ?? [];
      expect(cmd.slice(0, 2)).toEqual(["node", "/app/healthcheck.cjs"]);
      const r = await runProbe(cmd.slice(2), { [SERVICES[service].portVariable]: String(port) });
      expect(r).toMatchObject({ code: 0 });
      expect(seen).toEqual(["/healthz"]);
    },
  );

  test.each(SERVICE_NAMES)("the %s compose healthcheck probes /readyz on the service's port", async (service) => {
    const compose = parseYamlStrict(readRepoFile("docker-compose.yml"));
    const cmd: string[] = compose.services[service].healthcheck.test;
    expect(cmd.slice(0, 3)).toEqual(["CMD", "node", "/app/healthcheck.cjs"]);
    expect(await runProbe(cmd.slice(3), { [SERVICES[service].portVariable]: String(port) })).toMatchObject({ code: 0 });
    expect(seen).toEqual(["/readyz"]);
    status = 503;
    expect(await runProbe(cmd.slice(3), { [SERVICES[service].portVariable]: String(port) })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("503"),
    });
  });

  test("fails on an error status, a closed port, a hung server, and a missing port variable", async () => {
    status = 500;
    expect((await runProbe(["MEDIA_PORT", "/readyz"], { MEDIA_PORT: String(port) })).code).toBe(1);
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    expect(await runProbe(["MEDIA_PORT"], { MEDIA_PORT: String(closedPort) })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("ECONNREFUSED"),
    });
    hang = true;
    const hung = await runProbe(["MEDIA_PORT", "/healthz", "300"], { MEDIA_PORT: String(port) });
    expect(hung).toMatchObject({ code: 1, stderr: expect.stringContaining("did not answer within 300 ms") });
    expect(hung.ms).toBeLessThan(5000);
    expect(await runProbe(["MEDIA_PORT"], {})).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("MEDIA_PORT must hold a port number"),
    });
  });
});

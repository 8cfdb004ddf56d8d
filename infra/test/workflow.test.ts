import { WORKFLOW, workflowProblems } from "./support/workflow-checks";
import { parseYamlStrict, readRepoFile, type Json } from "./support/files";

const load = (): Json => parseYamlStrict(readRepoFile(WORKFLOW));
const testJob = (wf: Json): Json => wf.jobs.test;
const step = (wf: Json, re: RegExp): Json => {
  const s = testJob(wf).steps.find((x: Json) => re.test(String(x.run ?? x.uses ?? x.name ?? "")));
  if (!s) throw new Error(`no step ${re}`);
  return s;
};
const servicesRun = (wf: Json): Json =>
  testJob(wf).steps.filter((x: Json) => /^\s*pnpm test\s*$/.test(String(x.run ?? "")))[1];

describe(".github/workflows/ci.yml", () => {
  test("parses and passes every check: services, Node 24, pnpm, frozen install, two test runs, wiring", () => {
    expect(workflowProblems(load())).toEqual([]);
  });

  test("the services run is configured like the project's own CI", () => {
    const env = servicesRun(load()).env;
    expect(env).toMatchObject({
      REQUIRE_SERVICES: "1",
      STORAGE_DRIVER: "s3",
      DATABASE_URL: expect.stringMatching(/^postgresql:\/\/.+@127\.0\.0\.1:5432\//),
      REDIS_URL: "redis://127.0.0.1:6379",
      S3_ENDPOINT: "http://127.0.0.1:9000",
    });
  });

  test("a second job builds the images and brings the compose stack up healthy", () => {
    const compose = load().jobs.compose;
    const runs = compose.steps.map((s: Json) => String(s.run ?? ""));
    expect(runs.some((r: string) => /docker compose up --build/.test(r))).toBe(true);
    expect(runs.some((r: string) => /State\.Health\.Status.*management/.test(r) && /exit 1\s*$/.test(r))).toBe(true);
    expect(runs.some((r: string) => /localhost:3000\/readyz/.test(r) && /localhost:3001\/readyz/.test(r))).toBe(true);
  });

  describe("the checks catch a broken workflow", () => {
    const cases: Array<[string, (wf: Json) => void, RegExp]> = [
      ["Node 20", (wf) => (step(wf, /setup-node/).with["node-version"] = 20), /node-version 20, expected 24/],
      [
        "an unfrozen install",
        (wf) => (step(wf, /pnpm install/).run = "pnpm install"),
        /no `pnpm install --frozen-lockfile`/,
      ],
      [
        "one test run only",
        (wf) => testJob(wf).steps.splice(testJob(wf).steps.indexOf(servicesRun(wf)), 1),
        /runs 1 times, expected 2/,
      ],
      ["no REQUIRE_SERVICES", (wf) => delete servicesRun(wf).env.REQUIRE_SERVICES, /does not set REQUIRE_SERVICES=1/],
      [
        "a typo in a variable",
        (wf) => {
          const e = servicesRun(wf).env;
          e.REDIS_ULR = e.REDIS_URL;
          delete e.REDIS_URL;
        },
        /sets REDIS_ULR, which nothing reads/,
      ],
      [
        "a port nothing is mapped to",
        (wf) => (servicesRun(wf).env.DATABASE_URL = "postgresql://media:media@127.0.0.1:5433/media"),
        /DATABASE_URL port 5433 is not mapped/,
      ],
      [
        "wrong database credentials",
        (wf) => (servicesRun(wf).env.DATABASE_URL = "postgresql://postgres:postgres@127.0.0.1:5432/media"),
        /credentials differ from the postgres service's/,
      ],
      [
        "a bucket that is never created",
        (wf) => (servicesRun(wf).env.S3_BUCKET = "other-bucket"),
        /bucket other-bucket is never created/,
      ],
      ["an invalid bucket name", (wf) => (servicesRun(wf).env.S3_BUCKET = "X"), /S3_BUCKET/],
      [
        "S3 credentials that are not MinIO's",
        (wf) => (servicesRun(wf).env.S3_SECRET_ACCESS_KEY = "nope"),
        /S3 credentials differ from MinIO's/,
      ],
      [
        "Postgres 15",
        (wf) => (testJob(wf).services.postgres.image = "postgres:15"),
        /no postgres:16 service container/,
      ],
      [
        "a service without health check",
        (wf) => (testJob(wf).services.redis.options = ""),
        /service redis: no --health-cmd/,
      ],
      ["no MinIO", (wf) => (step(wf, /minio\/minio/).run = "echo skipped"), /MinIO is not started/],
      [
        "service variables in the embedded run",
        (wf) =>
          (testJob(wf).steps.find((x: Json) => /pnpm test/.test(String(x.run ?? ""))).env = {
            DATABASE_URL: "postgresql://x@127.0.0.1/x",
          }),
        /the embedded run sets DATABASE_URL/,
      ],
    ];
    test.each(cases)("%s", (_name, breakIt, expected) => {
      const wf = structuredClone(load());
      breakIt(wf);
      expect(workflowProblems(wf).join("\n")).toMatch(expected);
    });
  });
});

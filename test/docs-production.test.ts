// deployment.md's "Without containers" commands, run as they stand: both services in production
// mode on Postgres, Redis and S3 (s3rver here, where the page has MinIO), nginx with
// infra/cdn/nginx.conf in front of media, and a delete that reaches the edge. The swaps are this
// machine's: a database of its own, s3rver's endpoint and keys, free ports, a temporary folder for
// nginx. Runs where Postgres, Redis and nginx are (CI's Postgres + Redis + S3 pass); skipped elsewhere.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startS3rver, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import {
  answers200,
  bothReady,
  clientOf,
  embeddedSetup,
  run,
  scratchFiles,
  serversOf,
  startServer,
  swapped,
  type RunningServer,
  type Setup,
} from "./support/docs-commands";
import { freePort } from "./support/net";

const PAGE = "docs/deployment.md";
const NGINX = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"].find((p) => existsSync(p));
const wanted = process.env.REQUIRE_SERVICES === "1" || process.env.DATABASE_URL !== undefined;
const maybe = wanted ? describe : describe.skip;
if (wanted && !NGINX)
  throw new Error("nginx is not installed (apt-get install nginx-light): the docs' CDN commands need it");

maybe("docs: deployment.md without containers (Postgres, Redis, S3, nginx as the CDN)", () => {
  const database = `docs_test_${process.pid}_${Date.now()}`;
  const scratch = scratchFiles(["production.env"]);
  let setup: Setup;
  let s3: RunningS3rver;
  let cdnDir: string;
  let cdn: string;
  let swaps: Array<readonly [string, string]>;
  /** Every block of the group: each swap must hit somewhere in it. */
  let groupText: string;
  const servers: RunningServer[] = [];

  beforeAll(async () => {
    setup = await embeddedSetup();
    s3 = await startS3rver();
    cdnDir = mkdtempSync(path.join(tmpdir(), "docs-cdn-"));
    const cdnPort = await freePort();
    cdn = `http://127.0.0.1:${cdnPort}`;
    const mediaPort = setup.env.MEDIA_PORT!;
    swaps = [
      ["media_platform", database],
      ["http://127.0.0.1:9000", s3.env.S3_ENDPOINT!],
      ["S3_BUCKET=media-assets", `S3_BUCKET=${s3.env.S3_BUCKET}`],
      ["S3_ACCESS_KEY_ID=media-platform", `S3_ACCESS_KEY_ID=${s3.env.S3_ACCESS_KEY_ID}`],
      ["S3_SECRET_ACCESS_KEY=media-platform-dev-secret", `S3_SECRET_ACCESS_KEY=${s3.env.S3_SECRET_ACCESS_KEY}`],
      ["server 127.0.0.1:3001;", `server 127.0.0.1:${mediaPort};`],
      ["127.0.0.1:8080", `127.0.0.1:${cdnPort}`],
      ["/tmp/media-cdn", cdnDir],
      // As root, nginx's workers would run as nobody, who cannot write the cache folder.
      ...(process.getuid?.() === 0 ? [["-g 'daemon off;'", "-g 'daemon off; user root;'"] as const] : []),
    ];
    // Whatever Redis is there, this run's keys stay apart.
    setup.env.REDIS_KEY_PREFIX = `${database}:`;
    setup.env.CDN = cdn;
    const [services, nginx] = serversOf("production", 2);
    groupText = [services, nginx, clientOf("production", PAGE)].map((b) => b.code).join("\n");
    servers.push(await startServer(services, setup.env, bothReady(setup), swapped(services.code, swaps, groupText)));
    servers.push(
      await startServer(
        nginx,
        setup.env,
        () => answers200(`${cdn}/nginx-health`),
        swapped(nginx.code, swaps, groupText),
      ),
    );
  }, 300_000);

  afterAll(async () => {
    for (const server of servers.reverse()) await server.interrupt(10_000);
    await s3?.stop();
    scratch.restore();
    spawnSync("psql", [
      "-h",
      "127.0.0.1",
      "-U",
      "postgres",
      "-d",
      "postgres",
      "-qc",
      `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`,
    ]);
    if (cdnDir) rmSync(cdnDir, { recursive: true, force: true });
    if (setup) rmSync(setup.dataDir, { recursive: true, force: true });
  });

  it("the services start in production mode: Postgres, S3, Redis", () => {
    const out = servers[0]!.output();
    expect(out).toMatch(/"database":"postgres"/);
    expect(out).toMatch(/"storage":"s3"/);
    expect(out).toMatch(/"redis":"on"/);
  });

  it("an upload is rendered through the edge, then served from it; a delete reaches the edge within two seconds", async () => {
    const client = clientOf("production", PAGE);
    const lines = await run(client, setup.env, swapped(client.code, swaps, groupText));
    expect(lines).toEqual(["200 MISS", "200 HIT", "404 MISS"]);
  });

  it("Ctrl-C stops the services with exit 0", async () => {
    const end = await servers.shift()!.interrupt();
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
  });
});

// No Docker engine here, so the images are assembled the way the Dockerfiles say, outside
// Docker: the build context filtered by .dockerignore, the build stage's RUN commands executed
// (pnpm install --frozen-lockfile, prisma generation, pnpm build, pnpm deploy --prod), the runtime stage's
// COPYs laid out under a temp root, its ENV and WORKDIR and CMD used to start each service.
// Both services then run from those trees in production mode with docker-compose.yml's
// environment (Postgres, Redis, S3 = s3rver; hosts rewritten to loopback): readiness through
// the image's own healthcheck script, then upload -> media MISS -> HIT across the shared bucket.
//
// Slow (a full offline install and two deploys, ~1 GB of files, ~2 min): runs when INFRA_IMAGE_SIM=1.
// INFRA_IMAGE_SIM_CONTEXT=<dir> uses a prepared build context instead of this checkout;
// INFRA_IMAGE_SIM_READY_PATH (default /readyz) is the readiness path probed before the flow.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { startS3rver, type RunningS3rver } from "../../packages/storage/src/testing/s3rver";
import { composeServiceEnv } from "./support/compose-checks";
import { dockerfilePath } from "./support/dockerfile-checks";
import { SERVICES, type ServiceName } from "./support/env-rules";
import {
  dockerignoreMatcher,
  execForm,
  parseDockerfile,
  parseYamlStrict,
  readRepoFile,
  REPO,
  stageEnv,
} from "./support/files";
import { freePort } from "../../test/support/net";

const enabled = process.env.INFRA_IMAGE_SIM === "1";
const mgmtRequire = createRequire(path.join(REPO, "services/management/package.json"));

jest.setTimeout(600_000);

function sh(cmd: string, cwd: string): void {
  const r = spawnSync("sh", ["-c", cmd], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, CI: "true" },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0)
    throw new Error(`\`${cmd}\` failed (${r.status}):\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
}

/** Copies the build context: tracked + untracked files not git-ignored, minus .dockerignore. */
function copyContext(dest: string): void {
  const ignored = dockerignoreMatcher(readRepoFile(".dockerignore"));
  const r = spawnSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], {
    cwd: REPO,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const rel of r.stdout.split("\0").filter(Boolean)) {
    if (ignored(rel) || !fs.existsSync(path.join(REPO, rel))) continue;
    fs.mkdirSync(path.dirname(path.join(dest, rel)), { recursive: true });
    fs.copyFileSync(path.join(REPO, rel), path.join(dest, rel));
  }
}

interface Image {
  root: string;
  workdir: string;
  env: Record<string, string>;
  cmd: string[];
}

/** Executes the Dockerfile's build stage in `ctx` and lays the runtime stage out under `root`. */
function assemble(service: ServiceName, ctx: string, work: string): Image {
  const df = parseDockerfile(readRepoFile(dockerfilePath(service)));
  const build = df.stages.find((s) => s.name === "build");
  const runtime = df.stages[df.stages.length - 1];
  if (!build) throw new Error("no build stage");
  const out = path.join(work, `out-${service}`);
  const mapBuild = (p: string) => p.replace(/^\/out(?=\/|$)/, out).replace(/^\/app(?=\/|$)/, ctx);
  for (const ins of build.instructions) {
    if (ins.keyword !== "RUN") continue;
    const cmd = ins.args
      .replace(/--mount=\S+\s*/g, "")
      .replace(/(^|\s)\/out\//g, `$1${out}/`)
      .replace(/(^|\s)\/app\//g, `$1${ctx}/`);
    sh(cmd, ctx);
  }
  const root = path.join(work, `image-${service}`);
  let workdir = "/";
  for (const ins of runtime.instructions) {
    const tokens = ins.args.split(/\s+/);
    if (ins.keyword === "WORKDIR") workdir = ins.args;
    if (ins.keyword === "COPY") {
      const from = tokens.find((t) => t.startsWith("--from="))?.slice(7);
      const [src, dst] = tokens.filter((t) => !t.startsWith("--"));
      const source = from ? mapBuild(src) : path.join(ctx, src);
      fs.mkdirSync(path.dirname(path.join(root, dst)), { recursive: true });
      fs.cpSync(source, path.join(root, dst), { recursive: true, verbatimSymlinks: true });
    }
    if (ins.keyword === "RUN") {
      const m = /mkdir -p (\S+)/.exec(ins.args);
      if (m) fs.mkdirSync(path.join(root, m[1]), { recursive: true });
    }
  }
  const cmdIns = runtime.instructions.filter((i) => i.keyword === "CMD").pop();
  return { root, workdir: path.join(root, workdir), env: stageEnv(runtime), cmd: execForm(cmdIns?.args ?? "[]") ?? [] };
}

async function waitReady(
  image: Image,
  portVariable: string,
  env: Record<string, string>,
  child: ChildProcess,
  log: () => string,
): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    // Asynchronously: s3rver runs in this process and must keep answering while the probe waits.
    const code = await new Promise<number | null>((resolve) => {
      const probe = spawn(
        process.execPath,
        [
          path.join(image.root, "app/healthcheck.cjs"),
          portVariable,
          process.env.INFRA_IMAGE_SIM_READY_PATH ?? "/readyz",
        ],
        { env: { ...env }, stdio: "ignore" },
      );
      probe.on("close", resolve);
    });
    if (code === 0) return;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`not ready (exit ${child.exitCode}):\n${log().slice(-4000)}`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

(enabled ? describe : describe.skip)("images assembled from the Dockerfiles, run in production mode", () => {
  let work: string;
  let ctx: string;
  const images: Partial<Record<ServiceName, Image>> = {};
  const children: ChildProcess[] = [];
  const logs: Record<string, string> = {};
  let s3: RunningS3rver | undefined;
  let dbName: string | undefined;
  const adminUrl = process.env.DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.REDIS_URL || "redis://127.0.0.1:6379";
  const ports: Partial<Record<ServiceName, number>> = {};

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "image-sim-"));
    ctx = path.join(work, "ctx");
    // INFRA_IMAGE_SIM_CONTEXT: a prepared build context (e.g. a branch's export) instead of this checkout.
    if (process.env.INFRA_IMAGE_SIM_CONTEXT) fs.cpSync(process.env.INFRA_IMAGE_SIM_CONTEXT, ctx, { recursive: true });
    else copyContext(ctx);
  });

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null) {
        const done = new Promise((r) => c.once("exit", r));
        c.kill("SIGTERM");
        await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))]);
        if (c.exitCode === null) c.kill("SIGKILL");
      }
    }
    await s3?.stop();
    if (dbName) {
      const pg = mgmtRequire("pg") as typeof import("pg");
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      await c.end();
    }
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test.each(["management", "media"] as ServiceName[])(
    "the %s image assembles: compiled deploy output (no tsx), sharp, healthcheck script",
    (service) => {
      const image = assemble(service, ctx, work);
      images[service] = image;
      expect(image.cmd).toEqual(["node", "dist/index.js"]);
      expect(fs.existsSync(path.join(image.workdir, "dist/index.js"))).toBe(true);
      // Plain JavaScript at run time: no TypeScript loader in the pruned install.
      expect(fs.existsSync(path.join(image.workdir, "node_modules/tsx"))).toBe(false);
      expect(fs.existsSync(path.join(image.workdir, "node_modules/sharp/package.json"))).toBe(true);
      expect(fs.existsSync(path.join(image.root, "app/healthcheck.cjs"))).toBe(true);
      // Dev-only tools stay out of the pruned install.
      expect(fs.existsSync(path.join(image.workdir, "node_modules/jest"))).toBe(false);
      if (service === "media") {
        // Worker-thread entries beside the bundle, where the pool and the face detector look.
        for (const f of ["worker.cjs", "kernels/index.js", "face-worker.cjs"])
          expect([f, fs.existsSync(path.join(image.workdir, "dist", f))]).toEqual([f, true]);
      }
      if (service === "management") {
        expect(fs.existsSync(path.join(image.workdir, "dist/cli/token.js"))).toBe(true);
        expect(fs.readdirSync(path.join(image.root, "app/prisma/migrations")).length).toBeGreaterThan(0);
      }
    },
  );

  test("both start with the compose environment, become ready, and serve upload -> media MISS -> HIT", async () => {
    const pg = mgmtRequire("pg") as typeof import("pg");
    const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
    await admin.connect();
    dbName = `infra_sim_${randomBytes(4).toString("hex")}`;
    await admin.query(`CREATE DATABASE "${dbName}"`);
    await admin.end();
    const dbUrl = new URL(adminUrl);
    dbUrl.pathname = `/${dbName}`;
    s3 = await startS3rver({ bucket: "media-assets" });
    ports.management = await freePort();
    ports.media = await freePort();

    const compose = parseYamlStrict(readRepoFile("docker-compose.yml"));
    const envFor = (service: ServiceName): Record<string, string> => {
      const image = images[service] as Image;
      const env: Record<string, string> = { ...composeServiceEnv(compose, service) };
      // Loopback stand-ins for the compose hosts; everything else exactly as compose sets it.
      if (env.DATABASE_URL) env.DATABASE_URL = dbUrl.toString();
      if (env.REDIS_URL) env.REDIS_URL = redisUrl;
      Object.assign(env, s3?.env);
      env.HOST = "127.0.0.1";
      env[SERVICES[service].portVariable] = String(ports[service]);
      if (env.DATA_DIR) env.DATA_DIR = path.join(image.root, env.DATA_DIR);
      if (env.MEDIA_PUBLIC_URL) env.MEDIA_PUBLIC_URL = `http://127.0.0.1:${ports.media}`;
      return { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), ...env };
    };
    for (const service of ["management", "media"] as ServiceName[]) {
      const image = images[service];
      if (!image) throw new Error(`${service} image not assembled`);
      const env = envFor(service);
      logs[service] = "";
      const child = spawn(image.cmd[0] === "node" ? process.execPath : image.cmd[0], image.cmd.slice(1), {
        cwd: image.workdir,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.on("data", (d) => (logs[service] += d));
      child.stderr?.on("data", (d) => (logs[service] += d));
      children.push(child);
      await waitReady(image, SERVICES[service].portVariable, env, child, () => logs[service]);
    }

    const jwt = mgmtRequire("jsonwebtoken") as typeof import("jsonwebtoken");
    const secret = composeServiceEnv(compose, "management").AUTH_JWT_SECRET;
    const token = jwt.sign({ workspace_id: "infra-sim", sub: "ci" }, secret, { algorithm: "HS256", expiresIn: "10m" });
    const form = new FormData();
    form.append(
      "file",
      new Blob([fs.readFileSync(path.join(REPO, "fixtures/images/camera.png"))], { type: "image/png" }),
      "camera.png",
    );
    const upload = await fetch(`http://127.0.0.1:${ports.management}/v1/assets/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    const asset = (await upload.json()) as { id: string; mediaUrl: string; format: string };
    expect(upload.status).toBe(201);
    expect(asset.mediaUrl.startsWith(`http://127.0.0.1:${ports.media}/`)).toBe(true);

    const first = await fetch(asset.mediaUrl);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("image/png");
    expect(first.headers.get("x-cache")).toBe("MISS");
    const bytes = Buffer.from(await first.arrayBuffer());
    expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
    const second = await fetch(asset.mediaUrl);
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(Buffer.from(await second.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

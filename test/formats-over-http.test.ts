// HEIC, camera RAW, PDF and SVG uploads as a client makes them, over HTTP, against both ways the
// product starts: `pnpm start` (both services from TypeScript through tsx) and the production
// bundle (`pnpm build`, then `node services/<name>/dist/index.js`, what the images run). Their
// decoders load WebAssembly (libheif), native code (@napi-rs/canvas, pdf.js's ES
// modules) and jsdom at run time, in worker threads and render processes: jest alone would not
// show a package that does not load the way a started service loads it.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  MANAGEMENT_READY,
  MEDIA_READY,
  REPO_ROOT,
  START_MODES,
  issueToken,
  startServiceProcess,
  stopServiceProcess,
  type ServiceProcess,
} from "../services/media/test/support/service-process";

const FORMATS = path.resolve(REPO_ROOT, "test", "fixtures", "formats");
const sample = (name: string) => fs.readFileSync(path.join(FORMATS, name));
// The Postgres pass covers the same code with other drivers; this runs in the embedded pass.
const run = process.env.REQUIRE_SERVICES === "1" ? describe.skip : describe;

interface Asset {
  id: string;
  format: string;
  width: number;
  height: number;
  mimeType: string;
  pages: number;
}

const MODES = START_MODES;

run.each(MODES)("HEIC, camera RAW, PDF and SVG over HTTP: $name", (mode) => {
  let dataDir: string;
  let media: ServiceProcess | undefined;
  let management: ServiceProcess | undefined;
  let token: string;

  beforeAll(async () => {
    if (mode.build) {
      const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      });
      if (build.status !== 0) throw new Error(`pnpm build failed:\n${build.stdout}\n${build.stderr}`);
    }
    dataDir = await mkdtemp(path.join(tmpdir(), "formats-http-"));
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$)/.test(k),
      ),
    );
    const env = {
      ...inherited,
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      STORAGE_DIR: path.join(dataDir, "blobs"),
      AUTH_JWT_SECRET: `formats-${randomUUID()}-${randomUUID()}`,
      LOG_LEVEL: "warn",
    };
    // The first PDF page starts a render process (through tsx under pnpm start) within its request:
    // on a loaded machine that outlasts the 30 s default deadline, which is not what is tested here.
    media = await startServiceProcess(
      mode.media,
      { ...env, MEDIA_PORT: "0", MEDIA_REQUEST_TIMEOUT_MS: "300000" },
      MEDIA_READY,
    );
    management = await startServiceProcess(
      mode.management,
      { ...env, MANAGEMENT_PORT: "0", MEDIA_PUBLIC_URL: media.url, MEDIA_PURGE_URLS: media.url },
      MANAGEMENT_READY,
    );
    token = issueToken(mode.token, env, "formats");
  }, 300_000);

  afterAll(async () => {
    await Promise.all([stopServiceProcess(media), stopServiceProcess(management)]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const uploadFile = async (
    name: string,
    bytes: Buffer = sample(name),
  ): Promise<{ status: number; body: Asset & { detail?: string } }> => {
    const form = new FormData();
    form.append("file", new Blob([bytes]), name);
    const res = await fetch(`${management!.url}/v1/assets/upload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}` },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as Asset & { detail?: string } };
  };

  const image = async (url: string) => {
    const res = await fetch(url);
    const body = Buffer.from(await res.arrayBuffer());
    return { res, body, meta: res.status === 200 ? await sharp(body).metadata() : undefined };
  };

  // The HEIC without a GPS position: an iPhone photo's (services/management/test/upload-formats.test.ts)
  // goes through the privacy rewrite, which is tested the way it is started on its own.
  it("a HEIC: its original as uploaded (image/heic), a 256 px JPEG thumbnail, an 800 px wide rendition", async () => {
    const { status, body } = await uploadFile("libheif-example-two-images.heic");
    expect({ status, detail: body.detail }).toEqual({ status: 201, detail: undefined });
    expect(body).toMatchObject({ format: "heic", mimeType: "image/heic", width: 1280, height: 854 });
    const original = await fetch(`${media!.url}/original/${body.id}.heic`);
    expect(original.status).toBe(200);
    expect(original.headers.get("content-type")).toBe("image/heic");
    const bytes = Buffer.from(await original.arrayBuffer());
    expect(bytes.equals(sample("libheif-example-two-images.heic"))).toBe(true);
    const thumb = await image(`${media!.url}/thumbnail:size=256/${body.id}.jpg`);
    expect(thumb.res.status).toBe(200);
    expect(thumb.res.headers.get("content-type")).toBe("image/jpeg");
    expect(thumb.res.headers.get("x-cache")).toBe("MISS");
    expect(thumb.meta).toMatchObject({ format: "jpeg", width: 256, height: 256 });
    const fitted = await image(`${media!.url}/resize:width=800/${body.id}.heic`);
    expect(fitted.meta).toMatchObject({ format: "jpeg", width: 800, height: 534 });
  });

  it("an SVG is sanitised in a worker thread (the script removed); one with 60,000 attributes on an element is a 422", async () => {
    const logo = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><script>alert(1)</script><rect width="40" height="20" fill="#0a0"/></svg>',
    );
    const { status, body } = await uploadFile("logo.svg", logo);
    expect(status).toBe(201);
    expect(body).toMatchObject({ format: "svg", width: 40, height: 20 });
    const original = await fetch(`${media!.url}/original/${body.id}.svg`);
    expect(await original.text()).not.toContain("script");
    const attributes = Array.from({ length: 60_000 }, (_, i) => `a${i}="1"`).join(" ");
    const refused = await uploadFile(
      "attributes.svg",
      Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg"><rect ${attributes}/></svg>`),
    );
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toMatch(/^An SVG element may have at most \d+ attributes \(<rect> has more\)$/);
  });

  it("a CR3 renders from its preview; a RW2 without one is a 415 saying so", async () => {
    const { status, body } = await uploadFile("canon-r6-pruned.cr3");
    expect(status).toBe(201);
    expect(body).toMatchObject({ format: "cr3", width: 1620, height: 1080 });
    const original = await fetch(`${media!.url}/original/${body.id}.cr3`);
    expect(original.headers.get("content-type")).toBe("image/x-canon-cr3");
    const thumb = await image(`${media!.url}/thumbnail:size=256/${body.id}.jpg`);
    expect(thumb.meta).toMatchObject({ format: "jpeg", width: 256, height: 256 });
    const refused = await uploadFile("exiftool-panasonic-lx3.rw2");
    expect(refused.status).toBe(415);
    expect(refused.body.detail).toMatch(/no usable embedded JPEG preview/);
  });

  // Starts the render process its pages are drawn in: minutes on a loaded machine.
  it("a PDF: pages as PNG (page:index=1 and 2, the right size), page 15 of 14 a 400, the original an attachment", async () => {
    const { status, body } = await uploadFile("pdfjs-tracemonkey.pdf");
    expect(status).toBe(201);
    expect(body).toMatchObject({ format: "pdf", width: 612, height: 792, pages: 14 });
    const first = await image(`${media!.url}/thumbnail:size=256/${body.id}.pdf`);
    expect(first.res.headers.get("content-type")).toBe("image/png");
    expect(first.meta).toMatchObject({ format: "png", width: 256, height: 256 });
    const page1 = await image(`${media!.url}/page:index=1/fit:width=306:height=396/${body.id}.png`);
    expect(page1.meta).toMatchObject({ format: "png", width: 306, height: 396, channels: 3 });
    const page2 = await image(`${media!.url}/page:index=2/resize:width=1224:enlarge=true/${body.id}.png`);
    expect(page2.meta).toMatchObject({ format: "png", width: 1224, height: 1584 });
    // Different pages, different pixels.
    expect(
      (await sharp(page2.body).resize(306, 396).raw().toBuffer()).equals(await sharp(page1.body).raw().toBuffer()),
    ).toBe(false);
    const missing = await fetch(`${media!.url}/page:index=15/${body.id}.png`);
    expect(missing.status).toBe(400);
    expect(await missing.text()).toMatch(/page 15 does not exist: the document has 14 pages/);
    const original = await fetch(`${media!.url}/original/${body.id}.pdf`);
    expect(original.headers.get("content-type")).toBe("application/pdf");
    expect(original.headers.get("content-disposition")).toMatch(/^attachment; filename="[0-9a-f-]{36}\.pdf"/);
    expect(Buffer.from(await original.arrayBuffer()).equals(sample("pdfjs-tracemonkey.pdf"))).toBe(true);
  }, 600_000);
});

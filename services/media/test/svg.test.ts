import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, type TransformationStep } from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { render } from "../src/render/pipeline/render";
import { planRender } from "../src/render/pipeline/plan";
import { svgDrawing } from "../src/render/pipeline/svg-density";
import { SVG_ORIGINAL_CSP } from "../src/originals";
import { startTestMedia, type TestMedia } from "./support/media-server";
import { closeHarness, harnessDeps } from "./support/render-harness";
import { specSteps } from "./support/spec-steps";
import { startRecordingListener } from "../../../test/support/net";

/**
 * SVG originals on the media service: every transformation answers PNG, drawn by librsvg at the
 * density its sizing step needs (a 2000 px thumbnail of a 100 px logo has edges as sharp as a
 * 100 px one), an explicit format step still wins, librsvg fetches nothing, and the original is
 * served as SVG with a content security policy and as an attachment unless asked inline.
 */
const CORPUS = path.resolve(__dirname, "../../../../shared/fixtures/corpus/sharp");
const LOGO = fs.readFileSync(path.join(CORPUS, "check.svg"));
const CIRCLE = fs.readFileSync(path.join(CORPUS, "circle.svg"));

/** The 16 transformations of the spec, in its notation, on a 100 x 100 original. */
const SPEC_STEPS = specSteps({ width: 50, height: 50 });

/** Widest run of partly transparent pixels (alpha 8-247) on row `y` of an RGBA image: the edge's blur. */
function widestEdge(rgba: Buffer, width: number, y: number): number {
  let widest = 0;
  let run = 0;
  for (let x = 0; x < width; x++) {
    const alpha = rgba[(y * width + x) * 4 + 3]!;
    run = alpha > 8 && alpha < 247 ? run + 1 : 0;
    widest = Math.max(widest, run);
  }
  return widest;
}

describe("SVG originals on the media service", () => {
  let media: TestMedia;
  let logo: string;
  let circle: string;
  let png: string;
  let listener: Awaited<ReturnType<typeof startRecordingListener>>;

  const put = (bytes: Buffer, contentType = "image/svg+xml"): string => {
    const id = randomUUID();
    media.store.blobs.set(originalKey(id), { data: bytes, contentType });
    return id;
  };
  const get = async (url: string) => {
    const res = await fetch(`${media.url}${url}`);
    return { res, body: Buffer.from(await res.arrayBuffer()) };
  };

  beforeAll(async () => {
    media = await startTestMedia({ render: (input, options) => render(input, harnessDeps(), options) });
    logo = put(LOGO);
    circle = put(CIRCLE);
    png = put(
      await sharp({ create: { width: 4, height: 4, channels: 3, background: "#f00" } })
        .png()
        .toBuffer(),
      "image/png",
    );
    listener = await startRecordingListener();
  });
  afterAll(async () => {
    await listener.close();
    await media.close();
    await closeHarness();
  });

  it("answers each of the spec's 16 transformations with a PNG", async () => {
    const answers: string[] = [];
    for (const steps of SPEC_STEPS) {
      const { res, body } = await get(`/${steps}/${logo.toUpperCase()}.svg`);
      const meta = await sharp(body)
        .metadata()
        .catch(() => undefined);
      answers.push(`${steps} ${res.status} ${res.headers.get("content-type")} ${meta?.format}`);
    }
    expect(answers).toEqual(SPEC_STEPS.map((steps) => `${steps} 200 image/png png`));
  });

  it("draws a 2000 px thumbnail of a 100 px logo at 2000 px: as sharp as librsvg's own drawing at that size", async () => {
    const { res, body } = await get(`/thumbnail:size=2000/${logo}.svg`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    const got = await sharp(body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([got.info.width, got.info.height]).toEqual([2000, 2000]);
    // 20 x 72 dpi: the logo's own drawing at 2000 px, pixel for pixel (PNG is lossless), on
    // rows across the tick.
    const drawn = await sharp(LOGO, { density: 1440 }).ensureAlpha().raw().toBuffer();
    for (const row of [300, 700, 1000, 1500]) {
      const slice = (data: Buffer) => data.subarray(row * 2000 * 4, (row + 1) * 2000 * 4);
      expect([row, slice(got.data).equals(slice(drawn))]).toEqual([row, true]);
    }
    // Enlarging the 100 px drawing instead would blur every edge over about 20 px.
    const enlarged = await sharp(await sharp(LOGO).png().toBuffer())
      .resize(2000, 2000)
      .ensureAlpha()
      .raw()
      .toBuffer();
    expect(widestEdge(enlarged, 2000, 1000)).toBeGreaterThan(10);
    expect(widestEdge(got.data, 2000, 1000)).toBeLessThanOrEqual(2);
  });

  it.each([
    "thumbnail:size=2000",
    "saturation:value=1.0/thumbnail:size=2000",
    "grayscale:lightness=0/fit:width=2000:height=2000",
  ])("keeps a circle's edge within 2 px at 250 times its size (an 8 px icon, %s)", async (steps) => {
    const { res, body } = await get(`/${steps}/${circle}.svg`);
    expect(res.status).toBe(200);
    const { data, info } = await sharp(body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([2000, 2000]);
    // Centre (4, 4), radius 3.75 user units of 250 px: the middle row enters the disc at x = 62.5.
    const row = 1000;
    expect(widestEdge(data, 2000, row)).toBeLessThanOrEqual(2);
    expect(data[(row * 2000 + 58) * 4 + 3]).toBe(0);
    expect(data[(row * 2000 + 67) * 4 + 3]).toBe(255);
    // deeppink (#ff1493) inside, or its grey.
    const centre = [...data.subarray((row * 2000 + 1000) * 4, (row * 2000 + 1000) * 4 + 4)];
    expect(centre).toEqual(
      steps.startsWith("grayscale") ? [centre[0], centre[0], centre[0], 255] : [255, 20, 147, 255],
    );
  });

  it("lets an explicit format step choose the output", async () => {
    for (const [type, contentType, format] of [
      ["webp", "image/webp", "webp"],
      ["jpeg", "image/jpeg", "jpeg"],
      ["avif", "image/avif", "heif"],
    ] as const) {
      const { res, body } = await get(`/resize:width=300:enlarge=true/format:type=${type}/${logo}.svg`);
      expect([type, res.status, res.headers.get("content-type")]).toEqual([type, 200, contentType]);
      const meta = await sharp(body).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, 300, 300]);
    }
  });

  it("keeps crop coordinates in the asset's reported pixels (72 dpi)", async () => {
    const { res, body } = await get(`/crop:x=50:y=0:width=50:height=50/${logo}.svg`);
    expect(res.status).toBe(200);
    const meta = await sharp(body).metadata();
    expect([meta.width, meta.height]).toEqual([50, 50]);
    // The tick's upper right part: the same pixels as that region of the 72 dpi drawing.
    const expected = await sharp(LOGO).extract({ left: 50, top: 0, width: 50, height: 50 }).raw().toBuffer();
    expect((await sharp(body).raw().toBuffer()).equals(expected)).toBe(true);
  });

  it("fetches nothing, even for a stored SVG that still names outside resources", async () => {
    const url = `http://127.0.0.1:${listener.port}`;
    const hostile = put(
      Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="20" height="20">` +
          `<image href="${url}/image.png" width="20" height="20"/><image xlink:href="file:///etc/passwd" width="20" height="20"/>` +
          `<rect width="10" height="10" fill="url(${url}/paint.svg#p)"/><use href="${url}/use.svg#u"/>` +
          `<style>@import url(${url}/sheet.css);</style></svg>`,
      ),
    );
    for (const steps of ["thumbnail:size=200", "grayscale:lightness=0", "fit:width=64:height=64"]) {
      const { res } = await get(`/${steps}/${hostile}.svg`);
      expect([steps, res.status, res.headers.get("content-type")]).toEqual([steps, 200, "image/png"]);
    }
    expect(listener.seen).toEqual([]);
  });

  it("serves the original as SVG with a content security policy, as an attachment unless ?inline", async () => {
    const plain = await get(`/original/${logo}.svg`);
    expect(plain.res.status).toBe(200);
    expect(plain.body.equals(LOGO)).toBe(true);
    expect(plain.res.headers.get("content-type")).toBe("image/svg+xml");
    expect(plain.res.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'");
    expect(SVG_ORIGINAL_CSP).toBe("default-src 'none'; style-src 'unsafe-inline'");
    expect(plain.res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(plain.res.headers.get("content-disposition")).toBe(`attachment; filename="${logo}.svg"`);

    const named = await get(`/original/${logo}.svg?download=brand`);
    expect(named.res.headers.get("content-disposition")).toBe('attachment; filename="brand.svg"');

    for (const query of ["inline", "inline=", "inline=true"]) {
      const inline = await get(`/original/${logo}.svg?${query}`);
      expect([query, inline.res.status, inline.res.headers.get("content-disposition")]).toEqual([query, 200, "inline"]);
      expect(inline.res.headers.get("content-security-policy")).toBe(SVG_ORIGINAL_CSP);
    }

    for (const query of ["inline=yes", "inline&inline", "inline&download=x.svg"]) {
      const refused = await get(`/original/${logo}.svg?${query}`);
      expect([query, refused.res.status]).toEqual([query, 400]);
      expect(JSON.parse(refused.body.toString()).errors[0].path).toBe("inline");
    }

    // Raster originals are as before: no policy, no disposition unless asked.
    const raster = await get(`/original/${png}.png`);
    expect(raster.res.headers.get("content-security-policy")).toBeNull();
    expect(raster.res.headers.get("content-disposition")).toBeNull();
  });
});

describe("the density an SVG is drawn at", () => {
  const limits = defaultMediaLimits;
  const stepsOf = (path: string): TransformationStep[] =>
    parseMediaPath(`/${path}/00000000-0000-4000-8000-000000000000.svg`, limits).steps;
  const drawing = (path: string, intrinsic: { width: number; height: number }, limitInputPixels = 100_000_000) => {
    const steps = stepsOf(path);
    const planAt = (size: { width: number; height: number }) => planRender(steps, size, limits, { format: "png" });
    const { size, density } = svgDrawing(steps, planAt(intrinsic), intrinsic, limitInputPixels, planAt);
    return { ...size, density: Math.round(density * 1000) / 1000 };
  };

  it("is the sizing step's output over the intrinsic size, up or down", () => {
    expect(drawing("thumbnail:size=2000", { width: 100, height: 100 })).toEqual({
      width: 2000,
      height: 2000,
      density: 1440,
    });
    expect(drawing("grayscale:lightness=0/fit:width=400:height=100", { width: 100, height: 50 })).toEqual({
      width: 400,
      height: 200,
      density: 288,
    });
    expect(drawing("resize:width=50", { width: 1000, height: 500 })).toEqual({ width: 50, height: 25, density: 3.6 });
  });

  it("stays at 72 dpi where the size the steps see matters or nothing is enlarged", () => {
    const at72 = { width: 100, height: 50, density: 72 };
    // resize never enlarges unless asked: the logo stays 100 px wide.
    expect(drawing("resize:width=2000", { width: 100, height: 50 })).toEqual(at72);
    expect(drawing("crop:width=50:height=50/resize:width=2000:enlarge=true", { width: 100, height: 50 })).toEqual(at72);
    expect(drawing("sharpen:value=1.0/thumbnail:size=500", { width: 100, height: 50 })).toEqual(at72);
    expect(drawing("grayscale:lightness=0", { width: 100, height: 50 })).toEqual(at72);
  });

  it("is capped at LIMIT_INPUT_PIXELS", () => {
    expect(drawing("thumbnail:size=2000", { width: 100, height: 100 }, 1_000_000)).toEqual({
      width: 1000,
      height: 1000,
      density: 720,
    });
  });
});

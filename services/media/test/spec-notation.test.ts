import sharp from "sharp";
import request from "supertest";
import { defaultMediaLimits } from "@media-platform/contracts";
import { render } from "../src/render/pipeline/render";
import { createPixelWorkers, type PixelWorkerPool } from "../src/render/pixels/pool";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

/*
 * The spec's own notation (`1.0 means unchanged`, `0.0 fully desaturated`, clipLimit's `3.0`,
 * `-5.0 to 5.0`) and what a person types (`01`, `.5`, `1.50`, `%2E` escapes, an upper-case id,
 * `FFF`, `rgb(255, 255, 255)`, `WHITE`): every spelling is answered 200 from the one cache entry
 * of the canonical spelling, with `Link: <canonical>; rel="canonical"` when it was not itself
 * canonical. The URLs are written by hand from the spec's text, never by our own formatter.
 */

type Case = [transformation: string, canonical: string, spellings: string[]];

// Canonical step spellings: numbers as JavaScript prints them, colours as 6/8 lower-case hex digits.
const CASES: Case[] = [
  [
    "crop",
    "crop:width=100:height=80:x=10:y=20",
    ["crop:width=0100:height=80:x=10:y=020", "crop:width=100:height=%38%30:x=10:y=20"],
  ],
  [
    "crop",
    "crop:width=100:height=80:gravity=north",
    ["crop:width=100:height=080:gravity=%6Eorth", "%63rop:width=100:height=80:gravity=north"],
  ],
  [
    "color-balance",
    "color-balance:cyan=10:magenta=-20.5:yellow=0:target=highlights",
    [
      "color-balance:cyan=10.0:magenta=-20.50:yellow=0.0:target=highlights",
      "color-balance:cyan=+10:magenta=-020.5:yellow=-0:target=highlights",
      "color-balance:cyan=10:magenta=-20.5:yellow=.0:target=highlight%73",
    ],
  ],
  ["clahe", "clahe:clipLimit=3:tileSize=16", ["clahe:clipLimit=3.0:tileSize=16", "clahe:clipLimit=3.00:tileSize=016"]],
  ["clahe", "clahe:clipLimit=40", ["clahe:clipLimit=40.0", "clahe:clipLimit=040.000"]],
  ["clahe", "clahe:clipLimit=1", ["clahe:clipLimit=1.0"]],
  [
    "grayscale",
    "grayscale:lightness=0",
    ["grayscale:lightness=0.0", "grayscale:lightness=-0", "grayscale:lightness=.0"],
  ],
  ["grayscale", "grayscale:lightness=-12.5", ["grayscale:lightness=-12.50", "grayscale:lightness=-12%2E5"]],
  [
    "fit",
    "fit:width=100:height=80:background=ffffff",
    [
      "fit:width=100:height=80:background=fff",
      "fit:width=100:height=80:background=FFF",
      "fit:width=100:height=80:background=FFFFFF",
      "fit:width=100:height=80:background=ffffffff",
      "fit:width=100:height=80:background=rgb(255,255,255)",
      "fit:width=100:height=80:background=rgb(255,%20255,%20255)",
      "fit:width=100:height=80:background=white",
      "fit:width=100:height=80:background=WHITE",
    ],
  ],
  [
    "fit",
    "fit:width=100:height=80:background=663399",
    ["fit:width=100:height=80:background=rebeccapurple", "fit:width=0100:height=80:background=rgb(102,51,153)"],
  ],
  ["saturation", "saturation:value=1", ["saturation:value=1.0", "saturation:value=1.00", "saturation:value=01"]],
  ["saturation", "saturation:value=0", ["saturation:value=0.0", "saturation:value=.0"]],
  [
    "saturation",
    "saturation:value=0.5",
    ["saturation:value=.5", "saturation:value=0.50", "saturation:value=%2E5", "saturation:value=0%2e5"],
  ],
  ["saturation", "saturation:value=1.5", ["saturation:value=1.50"]],
  ["saturation", "saturation:value=2", ["saturation:value=2.0"]],
  ["add-noise", "add-noise:type=gaussian:amount=10", ["add-noise:type=gaussian:amount=10.0"]],
  ["add-noise", "add-noise:amount=0.1", ["add-noise:amount=.1", "add-noise:amount=0.10"]],
  ["brightness", "brightness:value=1", ["brightness:value=1.0", "brightness:value=1.00"]],
  ["wave", "wave:amplitude=1:wavelength=5", ["wave:amplitude=1.0:wavelength=5.0"]],
  ["wave", "wave:amplitude=100:wavelength=500", ["wave:amplitude=100.0:wavelength=500.0"]],
  [
    "channelManipulation",
    "channelManipulation:red=0:green=0.99",
    ["channelManipulation:red=0.0:green=0.99", "channelManipulation:red=0.0:green=.99"],
  ],
  [
    "channelManipulation",
    "channelManipulation:red=1:green=1:blue=3",
    ["channelManipulation:red=1.0:green=1.0:blue=3.0"],
  ],
  ["sharpen", "sharpen:value=0", ["sharpen:value=0.0"]],
  ["sharpen", "sharpen:value=5", ["sharpen:value=5.0", "sharpen:value=05"]],
  ["avatar", "avatar:size=128:shape=circle", ["avatar:size=0128:shape=circle", "avatar:size=128:shape=%63ircle"]],
  [
    "avatar",
    "avatar:size=64:border=4:border_color=ff0000",
    ["avatar:size=64:border=4:border_color=F00", "avatar:size=64:border=4:border_color=FF0000"],
  ],
  ["thumbnail", "thumbnail:size=256", ["thumbnail:size=0256", "thumbnail:size=%32%35%36", "%74humbnail:size=256"]],
  ["thumbnail", "thumbnail:size=100:quality=75", ["thumbnail:size=100:quality=075"]],
  ["exposure", "exposure:value=0", ["exposure:value=0.0"]],
  ["exposure", "exposure:value=-5", ["exposure:value=-5.0"]],
  ["exposure", "exposure:value=5", ["exposure:value=5.0", "exposure:value=+5.0"]],
  ["solarize", "solarize:threshold=128", ["solarize:threshold=0128"]],
  ["threshold", "threshold:value=128", ["threshold:value=0128", "threshold:value=%31%32%38"]],
];

describe("the spec's notation and other spellings are served, from the canonical entry", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let pixels: PixelWorkerPool;
  beforeAll(async () => {
    // The real pipeline with real pixel workers: every transformation renders.
    pixels = createPixelWorkers({ size: 1 });
    const deps = {
      limits: defaultMediaLimits,
      limitInputPixels: 100_000_000,
      pixels,
      faces: { detect: async () => [] },
    };
    counting = countingRender((input, options) => render(input, deps, options));
    media = await startTestMedia({ render: counting.render });
  });
  afterAll(async () => {
    await media.close();
    await pixels.close();
  });

  it("covers every one of the spec's 16 transformations", () => {
    expect(new Set(CASES.map(([name]) => name)).size).toBe(16);
  });

  it.each(CASES)("%s: /%s/<id>.png and its other spellings", async (_name, canonicalStep, spellings) => {
    const id = await media.store.putFixture("astronaut.png");
    const canonical = `/${canonicalStep}/${id}.png`;
    const first = await request(media.server).get(canonical);
    expect([first.status, first.headers["x-cache"], first.headers.link]).toEqual([200, "MISS", undefined]);
    expect(first.headers["content-type"]).toBe("image/png");
    const renders = counting.calls.length;
    const targets = [
      ...spellings.map((step) => `/${step}/${id}.png`),
      `/${canonicalStep}/${id.toUpperCase()}.png`,
      `/${canonicalStep}/${id}.PNG`,
    ];
    for (const target of targets) {
      const res = await request(media.server).get(target);
      expect([target, res.status, res.headers["x-cache"]]).toEqual([target, 200, "HIT"]);
      expect(res.headers.etag).toBe(first.headers.etag);
      expect(res.headers.link).toBe(`<${canonical}>; rel="canonical"`);
      expect((res.body as Buffer).equals(first.body as Buffer)).toBe(true);
    }
    const again = await request(media.server).get(canonical);
    expect([again.status, again.headers["x-cache"], again.headers.link]).toEqual([200, "HIT", undefined]);
    expect(counting.calls.length).toBe(renders);
  });

  it("a first request in the spec's notation is the MISS that fills the canonical entry", async () => {
    const id = await media.store.putFixture("astronaut.png");
    const spec = await request(media.server).get(`/saturation:value=1.0/${id}.png`);
    expect([spec.status, spec.headers["x-cache"]]).toEqual([200, "MISS"]);
    expect(spec.headers.link).toBe(`</saturation:value=1/${id}.png>; rel="canonical"`);
    for (const target of [`/saturation:value=1/${id}.png`, `/saturation:value=1.00/${id}.png`]) {
      const res = await request(media.server).get(target);
      expect([target, res.status, res.headers["x-cache"], res.headers.etag]).toEqual([
        target,
        200,
        "HIT",
        spec.headers.etag,
      ]);
    }
  });

  it("the spec's example /thumbnail:size=256/<id>.jpg: a 256x256 JPEG, MISS then HIT", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    const miss = await request(media.server).get(`/thumbnail:size=256/${id}.jpg`);
    expect([miss.status, miss.headers["x-cache"], miss.headers["content-type"]]).toEqual([200, "MISS", "image/jpeg"]);
    const meta = await sharp(miss.body as Buffer).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 256, 256]);
    const hit = await request(media.server).get(`/thumbnail:size=256/${id}.jpg`);
    expect([hit.status, hit.headers["x-cache"], hit.headers.etag]).toEqual([200, "HIT", miss.headers.etag]);
  });

  it.each([
    ["a fraction where the spec says integer", "threshold:value=12.5", "threshold.value"],
    ["a fraction for solarize", "solarize:threshold=12.5", "solarize.threshold"],
    ["a number that is not one", "saturation:value=abc", "saturation.value"],
    ["a dot without digits", "saturation:value=1.", "saturation.value"],
    ["a value out of range", "exposure:value=5.1", "exposure.value"],
    ["an unknown name", "saturate:value=1.0", "saturate"],
    ["a colour channel above 255", "fit:width=10:height=10:background=rgb(256,0,0)", "fit.background"],
    ["a colour with decimal channels", "fit:width=10:height=10:background=rgb(255.0,0,0)", "fit.background"],
    ["an over-long colour channel", "fit:width=10:height=10:background=rgb(0000000255,0,0)", "fit.background"],
    ["nine hex digits", "fit:width=10:height=10:background=fffffffff", "fit.background"],
    ["a colour name that is none", "fit:width=10:height=10:background=whiteish", "fit.background"],
    ["rgb() where the spec says hex", "avatar:size=64:border=4:border_color=rgb(255,0,0)", "avatar.border_color"],
  ])("refuses %s with 400 naming the parameter, before any work", async (_what, step, path) => {
    const id = await media.store.putFixture("astronaut.png");
    const renders = counting.calls.length;
    const res = await request(media.server).get(`/${step}/${id}.png`);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.text) as { type: string; errors: { path: string }[] };
    expect(body.type).toBe("https://media-platform.dev/problems/invalid-media-url");
    expect(body.errors.map((e) => e.path)).toContain(path);
    expect(res.headers.link).toBeUndefined();
    expect(counting.calls.length).toBe(renders);
  });
});

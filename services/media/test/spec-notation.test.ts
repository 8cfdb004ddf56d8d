import request from "supertest";
import { defaultMediaLimits } from "@media-platform/contracts";
import { render } from "../src/pipeline/render";
import { createPixelWorkers, type PixelWorkerPool } from "../src/pixels/pool";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

/**
 * The spec writes its values as `1.0`, `0.0`, `3.0`, `5.0`: every transformation answers them,
 * and every spelling a person types for one value (`1`, `1.0`, `1.00`, `01`, `.5`, escapes, an
 * upper-case id) is the one rendition: rendered once, the same ETag, HIT after the first.
 * The URLs are written by hand from the spec's tables, not by our formatter.
 */
const GROUPS: Array<[string, string[]]> = [
  ["crop", ["crop:width=100:height=80", "crop:width=0100:height=80", "crop:width=%31%30%30:height=80"]],
  ["crop with x/y and gravity", ["crop:width=100:height=80:x=10:y=20", "crop:width=100:height=80:x=010:y=+20"]],
  [
    "color-balance",
    [
      "color-balance:cyan=20.0:magenta=0.0:yellow=-10.0",
      "color-balance:cyan=20:magenta=0:yellow=-10",
      "color-balance:cyan=20.00:magenta=.0:yellow=-10.0",
    ],
  ],
  ["color-balance target", ["color-balance:cyan=20.0:target=midtones", "color-balance:cyan=20:target=midtones"]],
  [
    "clahe defaults",
    ["clahe:clipLimit=3.0:tileSize=16", "clahe:clipLimit=3:tileSize=16", "clahe:clipLimit=3.00:tileSize=016"],
  ],
  ["clahe range ends", ["clahe:clipLimit=40.0:tileSize=2", "clahe:clipLimit=40:tileSize=2"]],
  ["grayscale", ["grayscale:lightness=0", "grayscale:lightness=0.0", "grayscale:lightness=.0"]],
  ["grayscale decimals", ["grayscale:lightness=12.5", "grayscale:lightness=12.50", "grayscale:lightness=+12.5"]],
  ["fit", ["fit:width=120:height=90:background=ffffff", "fit:width=0120:height=90:background=ffffff"]],
  ["saturation 1.0", ["saturation:value=1.0", "saturation:value=1", "saturation:value=1.00", "saturation:value=01"]],
  ["saturation 0.0", ["saturation:value=0.0", "saturation:value=0", "saturation:value=.0"]],
  ["saturation .5", ["saturation:value=.5", "saturation:value=0.5", "saturation:value=0.50", "saturation:value=%2E5"]],
  ["saturation 1.50", ["saturation:value=1.50", "saturation:value=1.5"]],
  ["saturation 2.0", ["saturation:value=2.0", "saturation:value=2"]],
  [
    "add-noise",
    ["add-noise:type=gaussian:amount=0.1", "add-noise:type=gaussian:amount=.1", "add-noise:type=gaussian:amount=0.10"],
  ],
  ["add-noise 10.0", ["add-noise:type=uniform:amount=10.0", "add-noise:type=uniform:amount=10"]],
  ["brightness", ["brightness:value=1.0", "brightness:value=1", "brightness:value=1.000"]],
  [
    "wave",
    ["wave:amplitude=1.0:wavelength=5.0", "wave:amplitude=1:wavelength=5", "wave:amplitude=01.0:wavelength=5.00"],
  ],
  ["wave upper", ["wave:amplitude=100.0:wavelength=500.0", "wave:amplitude=100:wavelength=500"]],
  [
    "channelManipulation",
    [
      "channelManipulation:red=0.0:green=0.99",
      "channelManipulation:red=0:green=.99",
      "channelManipulation:red=0.00:green=0.990",
    ],
  ],
  [
    "channelManipulation 3.0",
    ["channelManipulation:red=1.0:green=1.0:blue=3.0", "channelManipulation:red=1:green=1:blue=3"],
  ],
  ["sharpen 0.0", ["sharpen:value=0.0", "sharpen:value=0", "sharpen:value=.0"]],
  ["sharpen 5.0", ["sharpen:value=5.0", "sharpen:value=5"]],
  ["avatar", ["avatar:size=128", "avatar:size=0128"]],
  [
    "avatar circle",
    [
      "avatar:size=64:shape=circle:border=4:border_color=ff0000",
      "avatar:size=64:shape=circle:border=04:border_color=ff0000",
    ],
  ],
  ["thumbnail", ["thumbnail:size=256", "thumbnail:size=0256", "thumbnail:size=%32%35%36"]],
  ["thumbnail quality", ["thumbnail:size=50:quality=75", "thumbnail:size=50:quality=075"]],
  ["exposure 0.0", ["exposure:value=0.0", "exposure:value=0", "exposure:value=-0.0"]],
  ["exposure -5.0", ["exposure:value=-5.0", "exposure:value=-5", "exposure:value=-5.00"]],
  ["solarize", ["solarize:threshold=128", "solarize:threshold=0128"]],
  ["solarize bare", ["solarize", "solarize"]],
  ["threshold", ["threshold:value=128", "threshold:value=+128"]],
];

describe("the spec's notation and equivalent spellings, for every transformation", () => {
  let media: TestMedia;
  let id: string;
  let counting: ReturnType<typeof countingRender>;
  let pixels: PixelWorkerPool;
  beforeAll(async () => {
    pixels = createPixelWorkers({ size: 2 });
    const deps = {
      limits: defaultMediaLimits,
      limitInputPixels: 100_000_000,
      pixels,
      faces: { detect: async () => [] },
    };
    counting = countingRender((input, options) => render(input, deps, options));
    media = await startTestMedia({ render: counting.render });
    id = await media.store.putFixture("chelsea.png");
  });
  afterAll(async () => {
    await media.close();
    await pixels.close();
  });

  it.each(GROUPS)("%s: every spelling is answered 200 from one rendition", async (_name, spellings) => {
    const before = counting.calls.length;
    const answers = [];
    for (const steps of spellings) {
      for (const assetId of [id, id.toUpperCase()]) {
        const res = await request(media.server).get(`/${steps}/${assetId}.png`);
        expect([steps, res.status, res.headers["content-type"]]).toEqual([steps, 200, "image/png"]);
        answers.push(res);
      }
    }
    expect(counting.calls.length - before).toBe(1);
    expect(answers[0]!.headers["x-cache"]).toBe("MISS");
    for (const res of answers.slice(1)) {
      expect(res.headers["x-cache"]).toBe("HIT");
      expect(res.headers.etag).toBe(answers[0]!.headers.etag);
    }
  });

  it("answers the spec's own example, /thumbnail:size=256/<id>.jpg, for a stored PNG with the stored type", async () => {
    const res = await request(media.server).get(`/thumbnail:size=256/${id}.jpg`);
    expect([res.status, res.headers["content-type"]]).toEqual([200, "image/png"]);
  });
});

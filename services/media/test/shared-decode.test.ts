import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, PURGE_PATH } from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { DecodedImages } from "../src/render/pipeline/decoded-images";
import { render, type RenderDeps } from "../src/render/pipeline/render";
import { createMediaServer, type MediaServer } from "../src/server";
import { MemoryBlobStore } from "./support/memory-store";

const CORPUS = path.resolve(__dirname, "../../../../shared/fixtures/corpus/sharp");
const ID = "5a1f3c2e-8b4d-4e6f-9a7b-1c2d3e4f5a6b";
const SRCSET = [320, 640, 960, 1280, 1600, 1920];
const SECRET = "purge-secret-for-tests-0123456789";

const baseDeps: RenderDeps = {
  limits: defaultMediaLimits,
  limitInputPixels: 100_000_000,
  pixels: {
    run: async (kernel: string) => {
      throw new Error(`no pixel kernels here (${kernel})`);
    },
  },
  faces: { detect: async () => [] },
};

/** One rendition of `bytes` for a hand-written path's steps; `decoded` shares decodes under `key`. */
const renderPath = (bytes: Buffer, contentType: string, url: string, deps: RenderDeps, key?: string) =>
  render({ original: bytes, contentType, steps: parseMediaPath(url).steps, cacheKey: url, decodedKey: key }, deps);

/** Mean absolute difference per channel of two encoded images of the same size (alpha included). */
async function meanAbsoluteDifference(a: Buffer, b: Buffer): Promise<number> {
  const [x, y] = await Promise.all(
    [a, b].map((img) => sharp(img).ensureAlpha().raw().toBuffer({ resolveWithObject: true })),
  );
  expect([x!.info.width, x!.info.height]).toEqual([y!.info.width, y!.info.height]);
  let sum = 0;
  for (let i = 0; i < x!.data.length; i++) sum += Math.abs(x!.data[i]! - y!.data[i]!);
  return sum / x!.data.length;
}

describe("one decode for many sizes: results match independent renders (MAD <= 1.0 per channel)", () => {
  const cases: Array<[string, () => Promise<Buffer>, string, "jpeg" | "webp" | undefined]> = [
    ["a 6 MP JPEG", async () => readFileSync(path.join(CORPUS, "2569067123_aca715a2ee_o.jpg")), "image/jpeg", "jpeg"],
    [
      "a 3 MP PNG with alpha",
      async () => readFileSync(path.join(CORPUS, "alpha-premultiply-2048x1536-paper.png")),
      "image/png",
      undefined,
    ],
    [
      "a 1.8 MP AVIF",
      async () => readFileSync(path.join(CORPUS, "sdr_cosmos12920_cicp1-13-6_yuv444_full_qp10.avif")),
      "image/avif",
      undefined,
    ],
    [
      "a 2 MP WebP",
      () =>
        sharp(readFileSync(path.join(CORPUS, "2569067123_aca715a2ee_o.jpg")))
          .resize(2200)
          .webp({ quality: 90 })
          .toBuffer(),
      "image/webp",
      "webp",
    ],
  ];
  it.each(cases)(
    "%s: the six srcset widths, a cover crop and a two-step chain, from one decode",
    async (_label, load, type, shrinks) => {
      const bytes = await load();
      // Lossless output: the rendition's pixels themselves (a lossy encoder adds its own noise on top,
      // the same for both renders; see docs/responsive-delivery.md).
      const urls = [
        ...SRCSET.map((w) => `/resize:width=${w}/format:type=png/${ID}.jpg`),
        `/resize:width=400:height=300:fit=cover/format:type=png/${ID}.jpg`,
        `/resize:height=500/sharpen:value=.5/format:type=png/${ID}.jpg`,
      ];
      const decoded = new DecodedImages(256 * 1024 * 1024);
      const shared = await Promise.all(
        urls.map((u) => renderPath(bytes, type, u, { ...baseDeps, decoded }, `${ID}|0`)),
      );
      expect(decoded.decodes).toBe(1);
      // JPEG renditions more than 2x below the shared decode, WebP ones more than 3x, shrink on
      // load on their own (of the 2048 px decode: JPEG shares it with 1280-1920 px, WebP with
      // 960-1920 px).
      expect(decoded.shared).toBe(shrinks === "jpeg" ? 2 : shrinks === "webp" ? 3 : urls.length - 1);
      expect(decoded.peakBytes).toBeLessThanOrEqual(decoded.budgetBytes);
      for (const [i, url] of urls.entries()) {
        const alone = await renderPath(bytes, type, url, baseDeps);
        expect([shared[i]!.width, shared[i]!.height, shared[i]!.contentType]).toEqual([
          alone.width,
          alone.height,
          alone.contentType,
        ]);
        const mad = await meanAbsoluteDifference(shared[i]!.data, alone.data);
        expect({ url, mad: mad <= 1.0 ? "within 1.0" : mad }).toEqual({ url, mad: "within 1.0" });
      }
    },
    // 16 renders of a multi-megapixel original into PNG: seconds on an idle machine, minutes on a
    // loaded one (a guard against a hang, not a measure of speed).
    600_000,
  );

  it("leaves small originals, animations and non-resize first steps to decode on their own", async () => {
    const decoded = new DecodedImages(256 * 1024 * 1024);
    const deps = { ...baseDeps, decoded };
    const small = readFileSync(path.join(CORPUS, "320x240.jpg"));
    await renderPath(small, "image/jpeg", `/resize:width=100/${ID}.jpg`, deps, `${ID}|0`);
    const big = readFileSync(path.join(CORPUS, "2569067123_aca715a2ee_o.jpg"));
    await renderPath(big, "image/jpeg", `/thumbnail:size=64/${ID}.jpg`, deps, `${ID}|0`);
    const animated = readFileSync(path.join(CORPUS, "rotating-squares.webp"));
    await renderPath(animated, "image/webp", `/resize:width=100/${ID}.webp`, deps, `${ID}|0`);
    expect(decoded.decodes).toBe(0);
  });

  it("never exceeds its budget: a decode that does not fit is rendered on its own, with the same result", async () => {
    const bytes = readFileSync(path.join(CORPUS, "2569067123_aca715a2ee_o.jpg"));
    // Room for one 2048 px decode (2048 x 1672 x 4 bytes reserved), not for a second, larger one.
    const decoded = new DecodedImages(2048 * 1673 * 4);
    const deps = { ...baseDeps, decoded };
    const held = await Promise.all([
      renderPath(bytes, "image/jpeg", `/resize:width=1280/${ID}.jpg`, deps, `${ID}|0`),
      renderPath(bytes, "image/jpeg", `/resize:width=2600/${ID}.jpg`, deps, `${ID}|0`),
    ]);
    expect(decoded.decodes).toBe(1);
    expect(decoded.peakBytes).toBeLessThanOrEqual(decoded.budgetBytes);
    const alone = await renderPath(bytes, "image/jpeg", `/resize:width=2600/${ID}.jpg`, baseDeps);
    expect(held[1]!.data.equals(alone.data)).toBe(true);
  });
});

describe("a purge drops the decoded image", () => {
  let media: MediaServer;
  let url: string;
  const decoded = new DecodedImages(256 * 1024 * 1024, 60_000);
  const store = new MemoryBlobStore();
  beforeAll(async () => {
    const deps = { ...baseDeps, decoded };
    media = createMediaServer({
      store,
      decoded,
      render: (input, options) => render(input, deps, options),
      options: { purgeSecret: SECRET },
    });
    url = await media.listen(0, "127.0.0.1");
  });
  afterAll(() => media.close());

  it("held after a burst (kept idle for the next one), gone once the asset is purged; the next burst decodes the new original", async () => {
    await store.put(
      originalKey(ID),
      readFileSync(path.join(CORPUS, "alpha-premultiply-2048x1536-paper.png")),
      "image/png",
    );
    const burst = await Promise.all(SRCSET.map((w) => fetch(`${url}/resize:width=${w}/${ID}.png`)));
    expect(burst.map((r) => r.status)).toEqual(SRCSET.map(() => 200));
    expect(decoded.decodes).toBe(1);
    expect(decoded.holds(ID)).toBe(true);
    expect(decoded.heldBytes).toBe(2048 * 1536 * 4);

    const purged = await fetch(`${url}${PURGE_PATH}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": "application/json" },
      body: JSON.stringify({ assetIds: [ID] }),
    });
    expect(purged.status).toBe(204);
    expect(decoded.holds(ID)).toBe(false);
    expect(decoded.heldBytes).toBe(0);

    // The replaced original (opaque red): the next request decodes it, not the dropped image.
    await store.put(
      originalKey(ID),
      await sharp({ create: { width: 1600, height: 1000, channels: 3, background: "#ff0000" } })
        .png()
        .toBuffer(),
      "image/png",
    );
    const after = await fetch(`${url}/resize:width=320/${ID}.png`);
    expect(after.headers.get("x-cache")).toBe("MISS");
    const { data } = await sharp(Buffer.from(await after.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)]).toEqual([255, 0, 0]);
    expect(decoded.decodes).toBe(2);
  });
});

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { readdirSync } from "node:fs";
import { carriesGainMap } from "../src/render/pipeline/gain-map";
import { closeHarness, fixturePath, renderImage } from "./support/render-harness";

afterAll(closeHarness);

// sharp's own test images, in shared/ beside the repository: fail loudly when absent.
const CORPUS = path.resolve(__dirname, "..", "..", "..", "..", "shared", "fixtures", "corpus", "sharp");
const corpusFile = (name: string): Buffer => {
  const file = path.join(CORPUS, name);
  if (!existsSync(file)) throw new Error(`corpus file missing: ${file}`);
  return readFileSync(file);
};

async function gainMapSize(jpeg: Buffer): Promise<{ width: number; height: number } | undefined> {
  const { gainMap } = await sharp(jpeg).metadata();
  if (!gainMap) return undefined;
  const { width, height } = await sharp(gainMap.image).metadata();
  return { width, height };
}

describe("HDR gain maps", () => {
  it("the corpus original carries a 960x540 gain map for its 3840x2160 image", async () => {
    expect(await gainMapSize(corpusFile("gain-map.jpg"))).toEqual({ width: 960, height: 540 });
  });

  it("a resize keeps the gain map in JPEG output, scaled with the image", async () => {
    const out = await renderImage(corpusFile("gain-map.jpg"), "resize:width=960");
    expect(out.contentType).toBe("image/jpeg");
    expect([out.width, out.height]).toEqual([960, 540]);
    expect(await gainMapSize(out.data)).toEqual({ width: 240, height: 135 });
  });

  it("a JPEG without a gain map gets none", async () => {
    const out = await renderImage(readFileSync(fixturePath("rocket.jpg")), "resize:width=200");
    expect(await gainMapSize(out.data)).toBeUndefined();
  });

  it("a non-JPEG output of a gain-map original has no gain map (sharp keeps it in JPEG only)", async () => {
    const out = await renderImage(corpusFile("gain-map.jpg"), "resize:width=960/format:type=png");
    expect(out.contentType).toBe("image/png");
    expect((await sharp(out.data).metadata()).gainMap).toBeUndefined();
  });
});

describe("carriesGainMap: a JPEG's own announcement, read from its metadata segments", () => {
  it("agrees with libvips on every JPEG of the corpus", async () => {
    const jpegs = readdirSync(CORPUS).filter((name) => /\.jpe?g$/i.test(name));
    expect(jpegs.length).toBeGreaterThan(20);
    const disagreements: string[] = [];
    for (const name of jpegs) {
      const bytes = corpusFile(name);
      const libvips = await sharp(bytes)
        .metadata()
        .then((meta) => meta.gainMap !== undefined)
        .catch(() => false);
      if (carriesGainMap(bytes) !== libvips) disagreements.push(name);
    }
    expect(disagreements).toEqual([]);
    expect(carriesGainMap(corpusFile("gain-map.jpg"))).toBe(true);
  });

  it("ignores the signature outside the XMP and gain-map segments (an EXIF comment, the scan data)", async () => {
    const plain = await sharp(fixturePath("rocket.jpg")).resize(64).jpeg().toBuffer();
    // The text in an EXIF string (APP1 "Exif"), then in a COM segment: neither announces a map.
    const withExif = await sharp(plain)
      .withExif({ IFD0: { ImageDescription: "hdrgm:Version urn:iso:std:iso:ts:21496:-1" } })
      .jpeg()
      .toBuffer();
    const comment = Buffer.concat([
      plain.subarray(0, 2),
      Buffer.from([0xff, 0xfe, 0x00, 0x10]),
      Buffer.from("hdrgm:Version\0"),
      plain.subarray(2),
    ]);
    expect([carriesGainMap(plain), carriesGainMap(withExif), carriesGainMap(comment)]).toEqual([false, false, false]);
    expect(withExif.includes("hdrgm:Version")).toBe(true);
  });

  it("announces a map in an XMP segment, and reads streams cut before it, or malformed, as none", () => {
    const xmp = Buffer.from('http://ns.adobe.com/xap/1.0/\0<x:xmpmeta hdrgm:Version="1.0"/>');
    const app1 = Buffer.concat([Buffer.from([0xff, 0xe1]), Buffer.alloc(2), xmp]);
    app1.writeUInt16BE(xmp.length + 2, 2);
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8]), app1, Buffer.from([0xff, 0xda, 0x00, 0x02])]);
    expect(carriesGainMap(jpeg)).toBe(true);
    // Cut anywhere before the announcement is complete: none, and never a throw.
    const announced = jpeg.indexOf("hdrgm:Version") + "hdrgm:Version".length;
    for (let cut = 0; cut < announced; cut++) expect(carriesGainMap(jpeg.subarray(0, cut))).toBe(false);
    expect(carriesGainMap(Buffer.from([0xff, 0xd8, 0x00, 0x00, 0x00]))).toBe(false);
  });
});

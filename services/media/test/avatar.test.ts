import sharp from "sharp";
import { defaultMediaLimits } from "@media-platform/contracts";
import { createFaceDetector } from "../src/faces";
import type { RawImage } from "../src/render/types";
import { avatarCropBox, findFaces } from "../src/render/transformations/avatar";
import { TransformationInputError } from "../src/render/errors";
import type { FaceBox } from "../src/render/types";
import {
  closeHarness,
  decodePixels,
  fixturePath,
  harnessFaces,
  renderFixture,
  renderImage,
} from "./support/render-harness";

afterAll(closeHarness);

/**
 * The astronaut's face as face-api's tiny face detector reports it on the full 512x512
 * fixture (measured once: x 163.3, y 75.7, 116.0 x 111.0, score 0.98).
 */
const ASTRONAUT_FACE = { x: 163, y: 76, width: 116, height: 111 };
const FACE_CENTRE = { x: ASTRONAUT_FACE.x + ASTRONAUT_FACE.width / 2, y: ASTRONAUT_FACE.y + ASTRONAUT_FACE.height / 2 };

const px = (img: RawImage, x: number, y: number): number[] =>
  Array.from(img.data.subarray((y * img.width + x) * img.channels, (y * img.width + x + 1) * img.channels));

function meanAbsDiff(a: RawImage, b: RawImage): number {
  expect([a.width, a.height]).toEqual([b.width, b.height]);
  let sum = 0;
  for (let i = 0, j = 0; i < a.data.length; i += a.channels, j += b.channels) {
    for (let c = 0; c < 3; c++) sum += Math.abs(a.data[i + c]! - b.data[j + c]!);
  }
  return sum / (a.width * a.height * 3);
}

const contains = (outer: { left: number; top: number; width: number; height: number }, inner: typeof ASTRONAUT_FACE) =>
  inner.x >= outer.left &&
  inner.y >= outer.top &&
  inner.x + inner.width <= outer.left + outer.width &&
  inner.y + inner.height <= outer.top + outer.height;

describe("face detection", () => {
  it("finds the astronaut's face where it was measured, and no face on the cat", async () => {
    const faces = await findFaces(sharp(fixturePath("astronaut.png")), harnessFaces(), 512, 512);
    expect(faces).toHaveLength(1);
    const [face] = faces as [FaceBox];
    expect(face.score).toBeGreaterThan(0.9);
    expect(Math.abs(face.x - ASTRONAUT_FACE.x)).toBeLessThan(8);
    expect(Math.abs(face.y - ASTRONAUT_FACE.y)).toBeLessThan(8);
    expect(Math.abs(face.width - ASTRONAUT_FACE.width)).toBeLessThan(10);
    expect(Math.abs(face.height - ASTRONAUT_FACE.height)).toBeLessThan(10);

    expect(await findFaces(sharp(fixturePath("chelsea.png")), harnessFaces(), 451, 300)).toEqual([]);
  });

  it("starts a fresh worker after close()", async () => {
    const detector = createFaceDetector();
    const { data, info } = await sharp(fixturePath("astronaut.png"))
      .resize(256)
      .raw()
      .toBuffer({ resolveWithObject: true });
    const image: RawImage = { data, width: info.width, height: info.height, channels: 3 };
    expect(await detector.detect(image)).toHaveLength(1);
    await detector.close();
    expect(await detector.detect(image)).toHaveLength(1);
    await detector.close();
  });
});

describe("avatarCropBox", () => {
  it("is a square around the face with margin, centred near the face centre", () => {
    const box = avatarCropBox(512, 512, [{ ...ASTRONAUT_FACE, score: 0.98 }])!;
    expect(box.width).toBe(box.height);
    expect(contains(box, ASTRONAUT_FACE)).toBe(true);
    expect(box.width).toBeGreaterThanOrEqual(2 * ASTRONAUT_FACE.width);
    expect(Math.abs(box.left + box.width / 2 - FACE_CENTRE.x)).toBeLessThan(2);
    // Lifted a little towards the hair, but still close to the face centre.
    expect(Math.abs(box.top + box.height / 2 - FACE_CENTRE.y)).toBeLessThan(0.15 * ASTRONAUT_FACE.height);
  });

  it("covers every face, stays inside the image and shrinks to fit it", () => {
    const faces = [
      { x: 10, y: 20, width: 50, height: 50, score: 0.9 },
      { x: 200, y: 40, width: 60, height: 60, score: 0.8 },
    ];
    const box = avatarCropBox(400, 300, faces)!;
    expect(box.width).toBe(box.height);
    expect(box.left).toBeGreaterThanOrEqual(0);
    expect(box.top).toBeGreaterThanOrEqual(0);
    expect(box.left + box.width).toBeLessThanOrEqual(400);
    expect(box.top + box.height).toBeLessThanOrEqual(300);
    expect(box.width).toBe(300); // union 250 wide + 60 margin > 300: the short side
    expect(contains(box, { x: 10, y: 20, width: 250, height: 80 })).toBe(true);

    const corner = avatarCropBox(640, 427, [{ x: 600, y: 400, width: 30, height: 20, score: 0.7 }])!;
    expect(corner).toEqual({ left: 640 - 60, top: 427 - 60, width: 60, height: 60 });
    expect(avatarCropBox(640, 427, [])).toBeUndefined();
  });
});

describe("avatar", () => {
  it("defaults to 128 px and crops the astronaut around her face", async () => {
    const out = await renderFixture("astronaut.png", "avatar");
    expect([out.width, out.height, out.contentType]).toEqual([128, 128, "image/png"]);
    const got = await decodePixels(out.data);
    const box = avatarCropBox(
      512,
      512,
      await findFaces(sharp(fixturePath("astronaut.png")), harnessFaces(), 512, 512),
    )!;
    expect(contains(box, ASTRONAUT_FACE)).toBe(true);
    expect(Math.hypot(box.left + box.width / 2 - FACE_CENTRE.x, box.top + box.height / 2 - FACE_CENTRE.y)).toBeLessThan(
      20,
    );
    // The output is that window scaled down, not the saliency or centre crop.
    const faceCrop = await decodePixels(sharp(fixturePath("astronaut.png")).extract(box).resize(128, 128));
    const centreCrop = await decodePixels(sharp(fixturePath("astronaut.png")).resize(128, 128));
    expect(meanAbsDiff(got, faceCrop)).toBeLessThan(1);
    expect(meanAbsDiff(got, centreCrop)).toBeGreaterThan(15);
  });

  it("on a large photo (resized before the cut) still frames the face in the middle", async () => {
    // The astronaut at 4x: the face window (~930 px) is far above 2 x 128, the shrink-first path.
    const large = await sharp(fixturePath("astronaut.png")).resize(2048, 2048).png({ compressionLevel: 1 }).toBuffer();
    const out = await renderImage(large, "avatar");
    expect([out.width, out.height]).toEqual([128, 128]);
    const box = avatarCropBox(2048, 2048, await findFaces(sharp(large), harnessFaces(), 2048, 2048))!;
    expect(
      contains(box, {
        x: 4 * ASTRONAUT_FACE.x,
        y: 4 * ASTRONAUT_FACE.y,
        width: 4 * ASTRONAUT_FACE.width,
        height: 4 * ASTRONAUT_FACE.height,
      }),
    ).toBe(true);
    // Same picture as cutting the window at full size, up to sub-pixel placement.
    const got = await decodePixels(out.data);
    expect(meanAbsDiff(got, await decodePixels(sharp(large).extract(box).resize(128, 128)))).toBeLessThan(3);
    // And the detector finds the face in the avatar itself, in the middle.
    const [face] = await findFaces(sharp(out.data), harnessFaces(), 128, 128);
    expect(face).toBeDefined();
    expect(Math.abs(face!.x + face!.width / 2 - 64)).toBeLessThan(6);
    expect(Math.abs(face!.y + face!.height / 2 - 64)).toBeLessThan(12);
  });

  it.each([512, 2048])("frames the face of an EXIF-rotated %i px JPEG as it is displayed", async (side) => {
    const upright = await sharp(fixturePath("astronaut.png"))
      .resize(side, side)
      .png({ compressionLevel: 1 })
      .toBuffer();
    // Stored sideways with orientation 6 (rotate 90° clockwise to display): shown upright.
    const stored = await sharp(upright).rotate(-90).jpeg({ quality: 95 }).withMetadata({ orientation: 6 }).toBuffer();
    const rotated = await decodePixels((await renderImage(stored, "avatar")).data);
    const plain = await decodePixels(
      (await renderImage(await sharp(upright).jpeg({ quality: 95 }).toBuffer(), "avatar")).data,
    );
    expect(meanAbsDiff(rotated, plain)).toBeLessThan(3);
  });

  it("follows the face through an earlier crop step", async () => {
    const out = await renderFixture("astronaut.png", "crop:width=400:height=400:x=100:y=0/avatar");
    expect([out.width, out.height]).toEqual([128, 128]);
    // The avatar step sees the 400x400 crop, where the face sits 100 px further left.
    const cropped = await sharp(fixturePath("astronaut.png"))
      .extract({ left: 100, top: 0, width: 400, height: 400 })
      .png()
      .toBuffer();
    const box = avatarCropBox(400, 400, await findFaces(sharp(cropped), harnessFaces(), 400, 400))!;
    expect(contains(box, { ...ASTRONAUT_FACE, x: ASTRONAUT_FACE.x - 100 })).toBe(true);
    const expected = await decodePixels(sharp(cropped).extract(box).resize(128, 128));
    expect(meanAbsDiff(await decodePixels(out.data), expected)).toBeLessThan(1);
  });

  it("returns a full square on a photo without a human face (the attention crop)", async () => {
    const out = await renderFixture("chelsea.png", "avatar:size=96");
    expect([out.width, out.height, out.contentType]).toEqual([96, 96, "image/png"]);
    const got = await decodePixels(out.data);
    const attention = await decodePixels(
      sharp(fixturePath("chelsea.png")).resize(96, 96, { fit: "cover", position: sharp.strategy.attention }),
    );
    expect(meanAbsDiff(got, attention)).toBeLessThan(1);
    // Picture to the edges: no letterbox bands.
    for (const [x, y] of [
      [0, 0],
      [95, 0],
      [0, 95],
      [95, 95],
      [48, 0],
      [48, 95],
    ] as const) {
      expect(px(got, x, y)).not.toEqual(px(got, 48, 48));
    }
  });

  it("keeps the stored format: a JPEG avatar of the default size", async () => {
    const out = await renderFixture("rocket.jpg", "avatar");
    expect([out.width, out.height, out.contentType]).toEqual([128, 128, "image/jpeg"]);
    expect((await sharp(out.data).metadata()).format).toBe("jpeg");
  });

  it("circle on PNG: transparent corners, opaque centre", async () => {
    const out = await renderFixture("astronaut.png", "avatar:size=100:shape=circle");
    const img = await decodePixels(out.data);
    expect([img.width, img.height, img.channels]).toEqual([100, 100, 4]);
    for (const [x, y] of [
      [0, 0],
      [99, 0],
      [0, 99],
      [99, 99],
      [8, 8],
    ] as const)
      expect(px(img, x, y)[3]).toBe(0);
    for (const [x, y] of [
      [50, 50],
      [50, 2],
      [2, 50],
      [97, 50],
    ] as const)
      expect(px(img, x, y)[3]).toBe(255);
  });

  it("circle on JPEG: white corners, picture inside", async () => {
    const out = await renderFixture("rocket.jpg", "avatar:size=100:shape=circle");
    expect(out.contentType).toBe("image/jpeg");
    const img = await decodePixels(out.data);
    for (const [x, y] of [
      [0, 0],
      [99, 0],
      [0, 99],
      [99, 99],
      [6, 6],
    ] as const) {
      for (const v of px(img, x, y).slice(0, 3)) expect(v).toBeGreaterThan(245);
    }
    // The night launch is dark inside the circle.
    expect(Math.max(...px(img, 50, 20).slice(0, 3))).toBeLessThan(120);
  });

  it("draws the border colour at the edge of a square, inside the size", async () => {
    const out = await renderFixture("astronaut.png", "avatar:size=120:border=6:border_color=ff0000");
    const img = await decodePixels(out.data);
    expect([img.width, img.height, img.channels]).toEqual([120, 120, 3]);
    for (const [x, y] of [
      [0, 0],
      [2, 60],
      [60, 2],
      [117, 60],
      [60, 119],
      [119, 119],
    ] as const) {
      expect(px(img, x, y).slice(0, 3)).toEqual([255, 0, 0]);
    }
    // Inside the border the picture is the unbordered avatar's.
    const plain = await decodePixels((await renderFixture("astronaut.png", "avatar:size=120")).data);
    expect(px(img, 60, 60)).toEqual(px(plain, 60, 60));
    expect(px(img, 8, 60)).toEqual(px(plain, 8, 60));
  });

  it("draws a ring for a circle, white by default, outside still transparent", async () => {
    const out = await renderFixture("astronaut.png", "avatar:size=100:shape=circle:border=5");
    const img = await decodePixels(out.data);
    for (const [x, y] of [
      [50, 2],
      [2, 50],
      [97, 50],
      [50, 97],
    ] as const)
      expect(px(img, x, y)).toEqual([255, 255, 255, 255]);
    expect(px(img, 0, 0)[3]).toBe(0);

    const jpeg = await decodePixels(
      (await renderFixture("rocket.jpg", "avatar:size=100:shape=circle:border=5:border_color=0000ff")).data,
    );
    const [r, g, b] = px(jpeg, 50, 2);
    expect(b).toBeGreaterThan(220);
    expect(Math.max(r!, g!)).toBeLessThan(40);
  });

  it("refuses a size above maxOutputPixels", async () => {
    const limits = { ...defaultMediaLimits, maxOutputPixels: 100 * 100 };
    const failure = renderFixture("astronaut.png", "avatar:size=200", { limits });
    await expect(failure).rejects.toBeInstanceOf(TransformationInputError);
    await expect(failure).rejects.toMatchObject({ path: "avatar" });
  });
});

import sharp from "sharp";
import { createTestApp, upload, type TestApp } from "./helpers";

const WS = "ws-nul";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A JPEG whose EXIF Make, Model and ImageDescription hold a NUL byte inside the string. */
async function nulExifJpeg(): Promise<Buffer> {
  const jpeg = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#888" } })
    .jpeg()
    .withExif({ IFD0: { Make: "CanXon", Model: "EOSX5D", ImageDescription: "helloXworld" } })
    .toBuffer();
  // libvips writes C strings, so the NULs are patched into the bytes afterwards (same length).
  for (const marker of ["CanXon", "EOSX5D", "helloXworld"]) {
    const at = jpeg.indexOf(marker, 0, "latin1");
    expect(at).toBeGreaterThan(0);
    jpeg[at + marker.indexOf("X")] = 0;
  }
  return jpeg;
}

it("an EXIF string with a NUL byte inside is stored without it (201, not 500), on this database", async () => {
  const bytes = await nulExifJpeg();
  expect((await sharp(bytes).metadata()).exif!.includes(Buffer.from("Can\0on", "latin1"))).toBe(true);
  const res = await upload(t.as(WS), bytes, "nul.jpg");
  expect(res.status).toBe(201);
  expect(res.body.exif).toMatchObject({ make: "Canon", model: "EOS5D" });
  const got = await t.as(WS).get(`/v1/assets/${res.body.id as string}`);
  expect(got.body.exif).toMatchObject({ make: "Canon", model: "EOS5D" });
});

import sharp from "sharp";
import { createTestApp, upload, type TestApp } from "./helpers";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("EXIF strings with NUL bytes", () => {
  it("upload is a 201 with the NULs stripped (text columns and JSON cannot hold \\0)", async () => {
    const jpeg = await sharp({ create: { width: 32, height: 24, channels: 3, background: "#808080" } })
      .jpeg()
      .withExif({ IFD0: { Make: "FujiQQfilm", Model: "XQT5", ImageDescription: "aQb" } })
      .toBuffer();
    // libvips writes EXIF strings as C strings (cut at a NUL): put the NULs into the bytes after.
    for (const marker of ["FujiQQfilm", "XQT5", "aQb"]) {
      const at = jpeg.indexOf(marker, 0, "latin1");
      expect(at).toBeGreaterThan(0);
      jpeg.write(marker.replace(/Q/g, "\0"), at, "latin1");
    }
    const res = await upload(t.as("ws-exif-nul"), jpeg, "nul.jpg");
    expect(res.status).toBe(201);
    expect(res.body.exif).toMatchObject({ make: "Fujifilm", model: "XT5" });
    const got = await t
      .as("ws-exif-nul")
      .get(`/v1/assets/${res.body.id as string}`)
      .expect(200);
    expect(got.body.exif).toMatchObject({ make: "Fujifilm", model: "XT5" });
  });
});

import { rasterMimeTypeOf } from "../src/image-formats";

describe("rasterMimeTypeOf", () => {
  it("gives the MIME type of every raster format sharp names, AVIF under libvips' name heif", () => {
    expect(
      Object.fromEntries(["jpeg", "png", "webp", "gif", "tiff", "heif"].map((f) => [f, rasterMimeTypeOf(f)])),
    ).toEqual({
      jpeg: "image/jpeg",
      png: "image/png",
      webp: "image/webp",
      gif: "image/gif",
      tiff: "image/tiff",
      heif: "image/avif",
    });
  });

  it("has none for SVG (its renditions are PNG) nor for formats the platform does not render", () => {
    for (const format of ["svg", "pdf", "jp2k", "raw", "magick", ""]) expect(rasterMimeTypeOf(format)).toBeUndefined();
  });
});

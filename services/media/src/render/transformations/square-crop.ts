import type sharp from "sharp";
import type { Region } from "../types";

/**
 * `box` of a `width` x `height` image, scaled to `size` x `size` (avatar, thumbnail on a focal
 * point). When that is a large reduction (a face in a camera photo), the whole image is resized
 * first and the window cut from the result: a pre-resize extract would turn off JPEG
 * shrink-on-load and decode every pixel (about 120 ms more on a 12-megapixel JPEG here).
 */
export function cropToSquare(
  image: sharp.Sharp,
  box: Region,
  size: number,
  width: number,
  height: number,
): sharp.Sharp {
  if (box.width < 2 * size) return image.extract(box).resize(size, size);
  const scale = size / box.width;
  const scaledWidth = Math.max(size, Math.round(width * scale));
  const scaledHeight = Math.max(size, Math.round(height * scale));
  return image.resize(scaledWidth, scaledHeight, { fit: "fill" }).extract({
    left: Math.min(Math.round(box.left * scale), scaledWidth - size),
    top: Math.min(Math.round(box.top * scale), scaledHeight - size),
    width: size,
    height: size,
  });
}

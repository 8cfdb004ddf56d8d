import type sharp from "sharp";

/**
 * libvips is given the request's deadline on every pipeline of a render (the original's, an
 * overlay's): its timeout works through progress signals on every tile (0.1-0.4 ms on a 256 px
 * thumbnail of a 2.5 MP JPEG), and a render whose planned pixels are few may still draw for long
 * (a complex SVG, an overlay's large original). Whole seconds, rounded up, at least one.
 */
export function withTimeout(image: sharp.Sharp, deadline: number | undefined): sharp.Sharp {
  if (deadline === undefined) return image;
  const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
  return image.timeout({ seconds });
}

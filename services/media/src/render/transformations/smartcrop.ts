import sharp from "sharp";
import { fromRaw, toRaw } from "../raw";
import type { RawImage } from "../types";
import type { Region, Size } from "../types";

/**
 * libvips' smartcrop scores a copy no larger than this (longest side, made with shrink-on-load)
 * and the window found is mapped back: the strategies score coarse features, and scoring a
 * 12 MP JPEG at full size costs 70-110 ms more than this probe (README, Decisions).
 */
const PROBE_SIDE = 512;

export type SmartStrategy = "attention" | "entropy";

const strategies = { attention: sharp.strategy.attention, entropy: sharp.strategy.entropy } as const;

/**
 * Start of `window` (a region of an image of `size`) placed by libvips' smartcrop, on the axes
 * `find` names; the other axis keeps the window's own span, and the search only looks there.
 *
 * sharp applies a strategy only through a cover resize, which scales until one side fits and then
 * crops the other; at scale 1 that is a pure crop of one axis. So two passes give a 2-D window:
 * the rows (full width at the window's height), then the columns of that band. An axis that the
 * probe's rounding leaves uncropped stays undefined (the caller centres it).
 */
export async function smartcropStart(
  image: sharp.Sharp,
  strategy: SmartStrategy,
  size: Size,
  window: Region,
  find: { left: boolean; top: boolean },
): Promise<{ left?: number; top?: number }> {
  const scale = Math.min(1, PROBE_SIDE / Math.max(size.width, size.height));
  const sx = Math.max(1, Math.round(size.width * scale)) / size.width;
  const sy = Math.max(1, Math.round(size.height * scale)) / size.height;
  // The probe covers the window's own span on an axis it does not search.
  const span = (search: boolean, start: number, length: number, extent: number, s: number) => {
    const from = search ? 0 : Math.min(Math.floor(start * s), Math.max(0, Math.round(extent * s) - 1));
    const to = search
      ? Math.round(extent * s)
      : Math.max(from + 1, Math.min(Math.round(extent * s), Math.ceil((start + length) * s)));
    return { from, length: to - from };
  };
  const cols = span(find.left, window.left, window.width, size.width, sx);
  const rows = span(find.top, window.top, window.height, size.height, sy);
  let probe: RawImage = await toRaw(
    image
      .clone()
      .resize(Math.round(size.width * sx), Math.round(size.height * sy), { fit: "fill" })
      .extract({ left: cols.from, top: rows.from, width: cols.length, height: rows.length }),
  );
  const position = strategies[strategy];
  const found: { left?: number; top?: number } = {};
  const height = Math.max(1, Math.round(window.height * sy));
  if (find.top && height < probe.height) {
    const { data, info } = await fromRaw(probe)
      .resize(probe.width, height, { fit: "cover", position })
      .raw()
      .toBuffer({ resolveWithObject: true });
    // libvips reports the offset of the kept area as a negative translation.
    found.top = clamp(Math.round(-(info.cropOffsetTop ?? 0) / sy), size.height - window.height);
    probe = { data, width: info.width, height: info.height, channels: probe.channels };
  }
  const width = Math.max(1, Math.round(window.width * sx));
  if (find.left && width < probe.width) {
    const { info } = await fromRaw(probe)
      .resize(width, probe.height, { fit: "cover", position })
      .raw()
      .toBuffer({ resolveWithObject: true });
    found.left = clamp(Math.round(-(info.cropOffsetLeft ?? 0) / sx), size.width - window.width);
  }
  return found;
}

const clamp = (v: number, max: number) => Math.min(Math.max(0, v), Math.max(0, max));

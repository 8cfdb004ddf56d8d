import { z } from "zod";

/**
 * The header facts of an original that the media service plans a render from (sizes, frames,
 * bands, colour space). Management reads them with sharp when it accepts the bytes and stores them
 * with the blob, as blob metadata under ORIGINAL_HEADER_METADATA, so a MISS plans without parsing
 * the header again; media reads the header itself when they are missing or do not parse (blobs
 * written before, or by anything else). One schema for both sides.
 */
export const ORIGINAL_HEADER_METADATA = "image-header";

/**
 * Blob metadata naming the workspace that owns an original: management writes it with the bytes,
 * media compares it between an image and the overlays drawn on it (same workspace only).
 */
export const ORIGINAL_WORKSPACE_METADATA = "workspace";

/**
 * Blob metadata of an original libvips cannot decode (HEIC, camera RAW) naming its rendering
 * source: the key of the JPEG made from it at upload, which media renders instead of it. The
 * original's header facts are then the source's (what media plans from).
 */
export const RENDERING_SOURCE_METADATA = "rendering-source";

/** Blob metadata of an original: its header facts (when known), its workspace and its rendering source (if any). */
export function originalBlobMetadata(
  header: OriginalHeader | undefined,
  workspaceId: string,
  renderingSource?: string,
): Record<string, string> {
  return {
    ...originalHeaderMetadata(header),
    [ORIGINAL_WORKSPACE_METADATA]: workspaceId,
    ...(renderingSource ? { [RENDERING_SOURCE_METADATA]: renderingSource } : {}),
  };
}

const SOURCE_KEY = /^sources\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/v[1-9][0-9]{0,8}$/;

/** The rendering source an original's blob metadata names, or undefined (none, or not a source key). */
export function renderingSourceOf(metadata: Record<string, string> | undefined): string | undefined {
  const key = metadata?.[RENDERING_SOURCE_METADATA];
  return key !== undefined && SOURCE_KEY.test(key) ? key : undefined;
}

const dimension = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);

export const originalHeaderSchema = z.object({
  /** As stored. */
  width: dimension,
  height: dimension,
  /** As displayed, after the EXIF orientation (swapped for 90/270 degree orientations). */
  orientedWidth: dimension,
  orientedHeight: dimension,
  /** Frames (1 for a still image). */
  pages: z.number().int().min(1),
  hasAlpha: z.boolean(),
  channels: z.number().int().min(1).max(5),
  /** libvips' interpretation, e.g. "srgb", "b-w", "cmyk". */
  space: z.string().min(1).max(32),
  /** libvips' band format, e.g. "uchar", "ushort". */
  depth: z.string().min(1).max(32),
});
export type OriginalHeader = z.infer<typeof originalHeaderSchema>;

/** The fields of sharp's Metadata the header is made of (structural, so contracts needs no sharp). */
export interface HeaderMetadata {
  width?: number;
  height?: number;
  autoOrient?: { width: number; height: number };
  pages?: number;
  hasAlpha?: boolean;
  channels?: number;
  space?: string;
  depth?: string;
}

/** The header's fields of sharp metadata, unchecked (each undefined where sharp gave none). */
export function originalHeaderFields(meta: HeaderMetadata): {
  [K in keyof OriginalHeader]: OriginalHeader[K] | undefined;
} {
  return {
    width: meta.width,
    height: meta.height,
    orientedWidth: meta.autoOrient?.width ?? meta.width,
    orientedHeight: meta.autoOrient?.height ?? meta.height,
    pages: meta.pages ?? 1,
    hasAlpha: meta.hasAlpha,
    channels: meta.channels,
    space: meta.space,
    depth: meta.depth,
  };
}

/** The header of sharp metadata, or undefined when a field is missing or out of range. */
export function originalHeaderOf(meta: HeaderMetadata): OriginalHeader | undefined {
  const parsed = originalHeaderSchema.safeParse(originalHeaderFields(meta));
  return parsed.success ? parsed.data : undefined;
}

/** Blob metadata carrying `header` (none when there is no header to store). */
export function originalHeaderMetadata(header: OriginalHeader | undefined): Record<string, string> | undefined {
  return header ? { [ORIGINAL_HEADER_METADATA]: JSON.stringify(header) } : undefined;
}

/** The header stored with a blob, or undefined when there is none or it does not parse. */
export function storedOriginalHeader(metadata: Record<string, string> | undefined): OriginalHeader | undefined {
  const value = metadata?.[ORIGINAL_HEADER_METADATA];
  if (value === undefined) return undefined;
  try {
    const parsed = originalHeaderSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

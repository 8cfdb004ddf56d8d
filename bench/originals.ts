/**
 * The originals of the media benches: each bench image stored once as management's upload stores
 * it (bytes plus header facts as blob metadata), then hard-linked under fresh asset ids, so every
 * MISS request reads a file no request read before.
 */
import { copyFileSync, linkSync, mkdirSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { originalHeaderMetadata, originalHeaderOf } from "@media-platform/contracts";
import { FilesystemBlobStore } from "@media-platform/storage";
import { assetId, type BenchImage } from "./media-cases";

/** Hard links originals/<id>@blob (+ @meta.json) of one image, created on demand before a cell. */
export class Originals {
  readonly dir: string;
  private next = 1;

  constructor(root: string) {
    this.dir = path.join(root, "blobs", "originals");
    mkdirSync(this.dir, { recursive: true });
  }

  /** Stored as management's upload stores an original: with its header facts as blob metadata. */
  async add(image: BenchImage): Promise<void> {
    const bytes = await image.make();
    const meta = await sharp(bytes).metadata();
    if (meta.width !== image.width || meta.height !== image.height) throw new Error(`${image.name}: wrong size`);
    const store = new FilesystemBlobStore(path.join(this.dir, ".."));
    await store.put(
      `source-${image.tag}`,
      bytes,
      `image/${image.format}`,
      originalHeaderMetadata(originalHeaderOf(meta)),
    );
  }

  /** Copies of each source made when its file reached the filesystem's link limit. */
  private readonly copies = new Map<number, number>();

  private source(image: BenchImage, suffix: string): string {
    const copy = this.copies.get(image.tag) ?? 0;
    return path.join(this.dir, `..`, `source-${image.tag}${copy > 0 ? `-${copy}` : ""}@${suffix}`);
  }

  /** Reserves `count` fresh ids of `image` (never used before) and links their files; returns the first. */
  reserve(image: BenchImage, count: number): number {
    const first = this.next;
    this.next += count;
    for (let n = first; n < first + count; n++) {
      const id = assetId(n, image);
      for (const suffix of ["blob", "meta.json"]) {
        const target = path.join(this.dir, `${id}@${suffix}`);
        try {
          linkSync(this.source(image, suffix), target);
        } catch (err) {
          // ext4 allows 65,000 links to one file (a long or repeated run makes more): link on from a copy.
          if ((err as NodeJS.ErrnoException).code !== "EMLINK") throw err;
          const full = { blob: this.source(image, "blob"), meta: this.source(image, "meta.json") };
          this.copies.set(image.tag, (this.copies.get(image.tag) ?? 0) + 1);
          copyFileSync(full.blob, this.source(image, "blob"));
          copyFileSync(full.meta, this.source(image, "meta.json"));
          linkSync(this.source(image, suffix), target);
        }
      }
    }
    return first;
  }
}

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import exifReader from "exif-reader";
import sharp from "sharp";

/**
 * The real-world corpus (`../shared/fixtures/corpus/sharp` beside the repository) as a user uploads
 * it, shared by the tests that start the services the ways the product starts: `pnpm start`
 * (test/start-corpus.test.ts) and the production bundle (services/media/test/corpus.test.ts).
 */

export const CORPUS = path.resolve(__dirname, "..", "..", "..", "shared", "fixtures", "corpus", "sharp");

/** The corpus's files (not its README), sorted. */
export function corpusFiles(): string[] {
  if (!fs.existsSync(CORPUS)) throw new Error(`the corpus is missing: ${CORPUS}`);
  return fs
    .readdirSync(CORPUS)
    .filter((f) => !f.endsWith(".md"))
    .sort();
}

/**
 * Every file of the corpus the platform refuses, with the problem it answers. Nothing else may be
 * refused: what libvips decodes is accepted, within the limits.
 * - over the pixel limit (LIMIT_INPUT_PIXELS, 100 MP): libvips would decode them, the limit says no;
 * - truncated or corrupt: libvips cannot decode them either;
 * - JPEG 2000: the libvips sharp ships has no JPEG 2000 loader;
 * - `.v`: libvips's own working format, not an interchange format people upload.
 */
export const CORPUS_REFUSALS: Record<string, string> = {
  "65536-uint32-limit.png": "422 image-too-large",
  "giant-image.jpg": "422 image-too-large",
  "corrupt-header.jpg": "422 undecodable-image",
  "truncated.jpg": "422 undecodable-image",
  "truncated.png": "422 undecodable-image",
  "relax.jp2": "415 unsupported-media-type",
  "relax_tileparts.jp2": "415 unsupported-media-type",
  "vfile.v": "415 unsupported-media-type",
};

/** Refusals whose reason is the format, not libvips: it decodes them, the platform does not take them. */
export const REFUSED_FORMATS = ["vfile.v"];

/** Whether libvips (through sharp) decodes every pixel of the file's first frame. */
export async function libvipsDecodes(file: string): Promise<boolean> {
  try {
    await sharp(path.join(CORPUS, file), { limitInputPixels: false, failOn: "error" }).raw().toBuffer();
    return true;
  } catch {
    return false;
  }
}

export interface UploadAnswer {
  status: number;
  /** The problem type's last segment, for a refusal. */
  problem?: string;
  detail?: string;
  id?: string;
  format?: string;
  width?: number;
  height?: number;
  ms: number;
}

/**
 * Uploads one file over HTTP, as a client does (multipart, bearer token), on a connection of its
 * own: a kept-alive connection the server closes as the next request starts would be a reset no
 * server fault caused.
 */
export async function uploadFile(apiUrl: string, token: string, name: string, bytes: Buffer): Promise<UploadAnswer> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(bytes)]), name);
  // The multipart encoding of the platform's own fetch, sent with node:http.
  const encoded = new Response(form);
  const payload = Buffer.from(await encoded.arrayBuffer());
  const started = performance.now();
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(`${apiUrl}/v1/assets/upload`, {
      method: "POST",
      agent: false,
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": encoded.headers.get("content-type")!,
        "Content-Length": payload.length,
      },
    });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, text: body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(payload);
  });
  const body = JSON.parse(text) as {
    type?: string;
    detail?: string;
    id?: string;
    format?: string;
    width?: number;
    height?: number;
  };
  return {
    status,
    problem: status === 201 ? undefined : body.type?.split("/").pop(),
    detail: body.detail,
    id: body.id,
    format: body.format,
    width: body.width,
    height: body.height,
    ms: performance.now() - started,
  };
}

/** Runs `work` over `items` with at most `limit` at once. */
export async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** The refusals among `answers`, as CORPUS_REFUSALS spells them. */
export const refusalsOf = (answers: Map<string, UploadAnswer>): Record<string, string> =>
  Object.fromEntries(
    [...answers].filter(([, a]) => a.status !== 201).map(([file, a]) => [file, `${a.status} ${a.problem}`]),
  );

/** The name the phone photo is uploaded under. */
export const PHONE_PHOTO = "phone-12mp-gps.jpg";

/**
 * A 12 MP phone photo with GPS: a corpus photo at 4000x3000 with the EXIF a phone writes (make,
 * model, GPS position, body serial number) and a drone's XMP position.
 */
export async function phonePhotoWithGps(): Promise<Buffer> {
  return sharp(path.join(CORPUS, "Landscape_1.jpg"))
    .resize(4000, 3000, { fit: "fill" })
    .withExif({
      IFD0: { Make: "Acme", Model: "Phone 9", Copyright: "Jane Doe" },
      IFD2: { BodySerialNumber: "SN-0042" },
      IFD3: {
        GPSLatitudeRef: "N",
        GPSLatitude: "48/1 51/1 2400/100",
        GPSLongitudeRef: "E",
        GPSLongitude: "2/1 21/1 300/100",
      },
    })
    .withXmp(
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:drone-dji="http://www.dji.com/drone-dji/1.0/" drone-dji:GpsLatitude="+48.857" drone-dji:GpsLongitude="+2.351"/></rdf:RDF></x:xmpmeta>`,
    )
    .jpeg({ quality: 85 })
    .toBuffer();
}

/** From the first scan to the end: a JPEG's entropy-coded image data. */
export function jpegScanData(jpeg: Buffer): Buffer {
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at + 1] !== 0xda) at += 2 + jpeg.readUInt16BE(at + 2);
  return jpeg.subarray(at);
}

/** What of a stored original is still private: GPS (EXIF, XMP) and serial numbers, by name. */
export async function privateMetadataOf(original: Buffer): Promise<string[]> {
  const meta = await sharp(original).metadata();
  const found: string[] = [];
  if (meta.exif) {
    const exif = exifReader(meta.exif);
    if (exif.GPSInfo && Object.keys(exif.GPSInfo).length > 0) found.push("EXIF GPS");
    if (exif.Photo?.BodySerialNumber !== undefined) found.push("EXIF BodySerialNumber");
  }
  const xmp = meta.xmp?.toString("utf8") ?? "";
  for (const name of xmp.match(/\b[\w-]+:(gps\w*|\w*serialnumber)\b/gi) ?? []) found.push(`XMP ${name}`);
  // The whole file too: an EXIF block libvips does not report (TIFF IFD0) or a second one.
  if (original.includes(Buffer.from("SN-0042"))) found.push("serial SN-0042");
  return found;
}

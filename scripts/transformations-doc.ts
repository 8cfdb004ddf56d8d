/**
 * Writes docs/transformations.md from the parameter table in packages/contracts, so the
 * reference cannot drift from what the service validates, and (with transformations-pictures.ts)
 * a picture of every example rendered by the media pipeline. `pnpm docs:transformations`;
 * tests fail when the page or a picture is stale.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import {
  defaultMediaLimits,
  describeAllowed,
  isSpecTransformation,
  MAX_STEPS,
  transformationNames,
  transformationSpecs,
  upperBound,
  type ParamSpec,
  type TransformationName,
} from "@media-platform/contracts";
import { OVERLAY_ASSET_ID, PICTURES_DIR, writePictures, type Picture } from "./transformations-pictures";

const EXAMPLES: Record<string, string> = {
  crop: "crop:width=300:height=200:gravity=north",
  "color-balance": "color-balance:cyan=40:yellow=-20:target=highlights",
  clahe: "clahe:clipLimit=4:tileSize=32",
  grayscale: "grayscale:lightness=10.5",
  fit: "fit:width=400:height=240:background=rgb(0,0,0)",
  saturation: "saturation:value=1.5",
  "add-noise": "add-noise:type=salt-pepper:amount=2",
  brightness: "brightness:value=1.2",
  wave: "wave:amplitude=10:wavelength=80",
  channelManipulation: "channelManipulation:red=1.2:blue=0.8",
  sharpen: "sharpen:value=1.5",
  avatar: "avatar:size=256:shape=circle:border=4:border_color=ff8800",
  thumbnail: "thumbnail:size=256:quality=80",
  exposure: "exposure:value=-0.5",
  solarize: "solarize:threshold=100",
  threshold: "threshold:value=128",
  resize: "resize:width=480:dpr=2",
  format: "format:type=webp:quality=70",
  frame: "frame:index=0",
  "max-bytes": "max-bytes:value=12000",
  overlay: `overlay:asset=${OVERLAY_ASSET_ID}:scale=.3:opacity=.8:x=-12:y=-12`,
  text: "text:text=Hello%2C%20%D7%A9%D7%9C%D7%95%D7%9D:size=36:color=white:background=00000099:gravity=south:y=-16",
  redact: "redact:faces=true:mode=pixelate",
};

/** Chains shown with their pictures after the single steps. */
const CHAINS: readonly Picture[] = [
  {
    file: "chain-crop-grayscale-thumbnail.jpg",
    steps: "crop:width=400:height=400:gravity=north/grayscale/thumbnail:size=200",
  },
  { file: "chain-thumbnail-sharpen.jpg", steps: "thumbnail:size=240/saturation:value=1.6/sharpen:value=2" },
  { file: "chain-wave-solarize.jpg", steps: "wave:amplitude=12:wavelength=90/solarize:threshold=160" },
];

/** quality=auto and max-bytes beside a fixed quality. */
const ENCODE_PICTURES: readonly Picture[] = [
  { file: "quality-75.jpg", steps: "thumbnail:size=240:quality=75" },
  { file: "quality-auto.jpg", steps: "thumbnail:size=240:quality=auto" },
  { file: "max-bytes-small.jpg", steps: "thumbnail:size=240/max-bytes:value=3000" },
];

/** The focal point of the focal examples: the mission patch on the astronaut's sleeve. */
const FOCAL = { x: 0.2, y: 0.75 };
const FOCAL_PICTURES: readonly Picture[] = [
  { file: "focal-crop-center.jpg", steps: "crop:width=240:height=160" },
  { file: "focal-crop-focal.jpg", steps: "crop:width=240:height=160:gravity=focal", focalPoint: FOCAL },
  { file: "focal-crop-attention.jpg", steps: "crop:width=240:height=160:gravity=attention" },
  { file: "focal-chain.jpg", steps: "crop:width=512:height=256:gravity=focal/thumbnail:size=160", focalPoint: FOCAL },
];

/**
 * An example for a transformation without one above: its required parameters without a
 * default, each at a middling value of its range, so a new row of the table shows up here.
 */
function fallbackExample(name: TransformationName): string {
  const parts: string[] = [name];
  for (const [param, spec] of Object.entries(transformationSpecs[name].params as Record<string, ParamSpec>)) {
    if (!spec.required || spec.default !== undefined) continue;
    let value: string;
    if (spec.type === "integer" || spec.type === "number") {
      const hi = upperBound(spec, defaultMediaLimits) ?? 200;
      value = String(Math.min(hi, Math.max(spec.exclusiveMin ? spec.min + 1 : spec.min, 200)));
    } else if (spec.type === "enum") value = spec.values[0]!;
    else value = "ff8800";
    parts.push(`${param}=${value}`);
  }
  return parts.join(":");
}

export function exampleOf(name: TransformationName): string {
  return EXAMPLES[name] ?? fallbackExample(name);
}

/** Every picture the page shows, besides the sample itself (original.jpg). */
export function docPictures(): Picture[] {
  return [
    ...transformationNames.map((name) => ({ file: `${name}.jpg`, steps: exampleOf(name) })),
    ...CHAINS,
    ...FOCAL_PICTURES,
    ...ENCODE_PICTURES,
  ];
}

const image = (picture: Picture) => `![${picture.steps}](images/transformations/${picture.file})`;

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

function row(name: string, spec: ParamSpec): string {
  const req = spec.required ? "required" : "optional";
  const def = spec.default === undefined ? "-" : String(spec.default);
  return `| \`${name}\` | ${req} | ${cell(describeAllowed(spec, defaultMediaLimits))} | ${def} | ${cell(spec.description)} |`;
}

export function renderTransformationsDoc(): string {
  const out: string[] = [
    "# Media transformations",
    "",
    "<!-- Generated by `pnpm docs:transformations` from packages/contracts; do not edit by hand. -->",
    "",
    "## Do it",
    "",
    "Name the steps in the URL, left to right, then the asset (an `ID` from an upload: [getting started](getting-started.md#do-it)):",
    "",
    "```sh",
    'curl -o out.jpg "http://localhost:3001/crop:width=800:height=600:gravity=attention/saturation:value=1.2/$ID.jpg"',
    'curl "http://localhost:3001/transformations"   # every step with its parameters, ranges and defaults, as JSON',
    "```",
    "",
    "## Steps",
    "",
    "URL form: `GET {media}/<step>[/<step>...]/<assetId>.<ext>`, each step `<name>[:<param>=<value>...]`.",
    `Steps apply left to right (chaining is our extension of the spec's single step; at most ${MAX_STEPS}).`,
    "A transformation whose parameters are all optional, or defaulted, may be written as the bare name (`/grayscale/<id>.jpg`, `/avatar/<id>.png`).",
    "Parameter names are case-sensitive. Unknown, repeated, missing or out-of-range parameters answer 400 `application/problem+json` naming the parameter and its allowed range.",
    'Ranges are inclusive. Where the spec gives no upper bound ("N+"), a configurable safety cap applies; the defaults are:',
    "",
    "| cap | default | variable |",
    "|---|---|---|",
    `| maxDimension (pixels) | ${defaultMediaLimits.maxDimension} | MEDIA_MAX_DIMENSION |`,
    `| maxOutputPixels | ${defaultMediaLimits.maxOutputPixels} | MEDIA_MAX_OUTPUT_PIXELS |`,
    `| maxWorkPixels (per request, summed over steps) | ${defaultMediaLimits.maxWorkPixels} | MEDIA_MAX_WORK_PIXELS |`,
    `| maxWorkCost (estimated CPU ms per request: calibrated cost per pixel of each step and the encoder, times frames) | ${defaultMediaLimits.maxWorkCost} | MEDIA_MAX_WORK_COST |`,
    `| maxMultiplier | ${defaultMediaLimits.maxMultiplier} | MEDIA_MAX_MULTIPLIER |`,
    `| maxNoiseAmount | ${defaultMediaLimits.maxNoiseAmount} | MEDIA_MAX_NOISE_AMOUNT |`,
    `| maxWaveAmplitude | ${defaultMediaLimits.maxWaveAmplitude} | MEDIA_MAX_WAVE_AMPLITUDE |`,
    `| maxWaveLength | ${defaultMediaLimits.maxWaveLength} | MEDIA_MAX_WAVE_LENGTH |`,
    `| maxSharpen | ${defaultMediaLimits.maxSharpen} | MEDIA_MAX_SHARPEN |`,
    "",
    "The output keeps the stored asset's format (Content-Type from the original, never from the URL extension), with EXIF orientation applied, metadata stripped and colours in sRGB. Animated GIF/WebP originals are rendered from their first frame.",
    "",
    "Every example below is rendered from this sample photo (512 x 512, stored as a JPEG) by the media service's own pipeline and shown at most 240 px wide:",
    "",
    "![the sample photo](images/transformations/original.jpg)",
    "",
  ];
  for (const [index, name] of transformationNames.entries()) {
    const spec = transformationSpecs[name];
    if (!isSpecTransformation(name) && isSpecTransformation(transformationNames[index - 1]!)) {
      out.push(
        "## Extensions",
        "",
        "The steps below are ours, beyond the spec's 16 transformations above (GET /transformations lists them after the spec's, with `extension: true`).",
        "",
      );
    }
    out.push(`## ${name}`, "", spec.description, "");
    const params = Object.entries(spec.params as Record<string, ParamSpec>);
    if (params.length) {
      out.push("| parameter | | allowed | default | meaning |", "|---|---|---|---|---|");
      for (const [p, s] of params) out.push(row(p, s));
      out.push("");
    }
    out.push(
      `Example: \`/${exampleOf(name)}/<assetId>.jpg\``,
      "",
      image({ file: `${name}.jpg`, steps: exampleOf(name) }),
      "",
    );
  }
  out.push("## Chaining", "", "Steps apply left to right, each to the previous step's output:", "");
  for (const chain of CHAINS) out.push(`\`/${chain.steps}/<assetId>.jpg\``, "", image(chain), "");
  out.push(
    "## Focal points and smart gravity",
    "",
    'An asset may have a focal point, set with `PATCH /v1/assets/<assetId>` `{"focalPoint": {"x": 0.7, "y": 0.3}}` (fractions 0-1 of the image as displayed, after EXIF orientation; `null` clears it). `thumbnail` and `avatar` centre their square on it (slid inside the image; `avatar` then runs no face detection) and `crop` with `gravity=focal` centres its window on it; without one they centre as usual (`gravity=focal` as `center`). Steps earlier in a chain carry the point along: `crop`, `resize`, `fit` and `thumbnail` map it into their output, steps that keep the size keep it, and a point cropped away is dropped.',
    "",
    "`crop` with `gravity=attention` or `gravity=entropy` places the window with libvips' smartcrop (attention: luminance frequency, saturation, skin tones; entropy: Shannon entropy), at the image's full resolution. With every gravity, `x` or `y` fixes its own axis.",
    "",
    `The same 240 x 160 crop placed by the default gravity, by a focal point on the mission patch (x ${FOCAL.x}, y ${FOCAL.y}), and by attention (which finds the face); then a chain: the crop carries the focal point into its output, where the thumbnail centres its square on it. Changing the focal point purges the asset's cached renditions.`,
    "",
    "| URL | focal point | result |",
    "|---|---|---|",
    ...FOCAL_PICTURES.map(
      (p) =>
        `| \`/${p.steps}/<assetId>.jpg\` | ${p.focalPoint ? `x ${p.focalPoint.x}, y ${p.focalPoint.y}` : "-"} | ${image(p)} |`,
    ),
    "",
    "## Automatic quality and byte budgets",
    "",
    "`quality=auto` (on `thumbnail` and `format`, the steps that take a quality) chooses the encoder quality per image: the lowest quality whose [SSIMULACRA2](https://github.com/cloudinary/ssimulacra2) score against the unencoded result reaches MEDIA_AUTO_QUALITY_TARGET (default 70; 90 is very high quality, 70 high, 50 medium). The search runs over qualities 30-95 in at most 4 trial encodes, each decoded and scored: it starts at the format's usual quality (JPEG and WebP 75, AVIF 55) and interpolates the next quality from the scores measured (a secant search); when none reaches the target, the highest quality tried is used. It applies to JPEG, WebP and AVIF stills; PNG, GIF and TIFF have no quality, and an animation keeps the default quality. The work budget counts the 4 encodes and 4 scores.",
    "",
    "`max-bytes:value=<bytes>` bounds the encoded size: a larger result is encoded again at lower quality (JPEG, WebP, AVIF: quality 40, then up to two tries between it and the quality used; PNG: a 256-colour palette), then at smaller sizes (the aspect ratio kept, scaled by the square root of the byte ratio), in at most 6 more encodes; what still does not fit answers 422 `max-bytes-unreachable` naming `max-bytes.value`. A smaller size shows in the result's width and height. An animation is not re-encoded: over its budget it answers 422. With both, `quality=auto` chooses first and `max-bytes` lowers from there. Both encode from the materialised result, so an HDR gain map of a JPEG original is not kept.",
    "",
    "Fixed quality 75, quality=auto at the default target, and a 3000-byte budget (the previews are re-encoded for this page; bench/results/latest.md has the bytes):",
    "",
    "| URL | result |",
    "|---|---|",
    ...ENCODE_PICTURES.map((p) => `| \`/${p.steps}/<assetId>.jpg\` | ${image(p)} |`),
    "",
    "## Animations",
    "",
    "A GIF or WebP original of several frames stays animated, with its frame delays and loop count, when the output format can carry an animation (GIF, WebP: the stored one, or `format:type=webp`) and every step of the URL applies frame by frame. Each frame then goes through the steps on its own (geometry, colour and pixel kernels alike; no kernel reads across a frame border), so every frame of the result has the same size. Otherwise the result is one frame, as a still:",
    "",
    "| case | result |",
    "|---|---|",
    "| `frame:index=N` anywhere in the URL | frame N (0-based); an index past the last frame is a 400 naming `frame.index` |",
    "| `avatar`, `crop` with `gravity=attention`/`entropy` (the region is chosen from the pixels, so it would jump between frames) | the first frame (the poster) |",
    "| output in AVIF, JPEG or PNG (`format:type=`) | the first frame (the poster) |",
    "| MEDIA_AUTO_FORMAT negotiation | not applied: an animation keeps its stored format |",
    "",
    "An animation that stays animated costs its frame count times the pixels of a still in the work budget (MEDIA_MAX_WORK_PIXELS), and one of more than MEDIA_MAX_ANIMATION_FRAMES frames is a 400 naming that limit; both are checked from the original's header, before any decoding. `add-noise` draws the same noise on every frame.",
    "",
  );
  return out.join("\n");
}

async function main(): Promise<void> {
  const file = path.resolve(__dirname, "../docs/transformations.md");
  writeFileSync(file, renderTransformationsDoc());
  console.log(`wrote ${file}`);
  await writePictures(docPictures());
  console.log(`wrote ${PICTURES_DIR}`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}

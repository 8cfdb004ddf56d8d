import {
  resolveParams,
  type RasterFormat,
  type GivenParams,
  type MediaLimits,
  type ResolvedParams,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";
import { transformations } from "../transformations";
import type { Transformation } from "../transformations/transformation";
import type { Size } from "../types";
import { overlayDecodeNs, searchedEncoderNsPerPixel, STEP_NS_PER_PIXEL, svgDrawNs, type OverlayFacts } from "./cost";
import { TransformationInputError } from "../errors";
import { heldPixels, type DecodeFacts } from "./held-pixels";

/** One step with its parameters resolved (defaults filled in once) and its sizes known. */
export interface PlannedStep<N extends TransformationName = TransformationName> {
  name: N;
  params: ResolvedParams<N>;
  transformation: Transformation<N>;
  input: Size;
  output: Size;
}

export interface RenderPlan {
  steps: PlannedStep[];
  /** Pixels the steps process, summed: each step counts the larger of its input and output. */
  workPixels: number;
  /** Estimated CPU milliseconds of the steps and the encoder (pipeline/cost.ts), all frames. */
  workCost: number;
  /** Pixels held in memory at the peak (held-pixels.ts): what the in-flight gate charges. */
  heldPixels: number;
}

/** What the plan needs to know of the encode besides the steps (a format step overrides `format`). */
export interface PlanOutput {
  format: RasterFormat;
  /** AVIF encoder effort; unset = sharp's default. */
  avifEffort?: number;
  /** Frames the render processes (animated originals); default 1. */
  frames?: number;
  /** CPU nanoseconds per pixel of drawing the original before the steps (a PDF page); none for a decode. */
  drawNsPerPixel?: number;
  /** How the original decodes (shrink-on-load); unset: decoded whole. */
  decode?: DecodeFacts;
  /** An SVG original's elements: its drawing is priced by them (pipeline/cost.ts svgDrawNs). */
  svgElements?: number;
  /** The overlay originals' facts by asset id: each layer decodes its original whole (overlayDecodeNs). */
  overlays?: ReadonlyMap<string, OverlayFacts>;
}

function planStep<N extends TransformationName>(
  name: N,
  given: GivenParams<N>,
  input: Size,
  limits: MediaLimits,
): PlannedStep<N> {
  const transformation: Transformation<N> = transformations[name];
  const params = resolveParams(name, given);
  const output = transformation.outputSize(input, params, limits);
  const pixels = output.width * output.height;
  if (pixels > limits.maxOutputPixels) {
    const path = transformation.sizeParam ? `${name}.${transformation.sizeParam}` : name;
    throw new TransformationInputError(
      path,
      `the output would be ${output.width} x ${output.height} = ${pixels} pixels, above the cap of ${limits.maxOutputPixels} (maxOutputPixels, MEDIA_MAX_OUTPUT_PIXELS)`,
    );
  }
  return { name, params, transformation, input, output };
}

function stepUsesFocalPoint<N extends TransformationName>(name: N, given: GivenParams<N>): boolean {
  const transformation: Transformation<N> = transformations[name];
  return transformation.usesFocalPoint?.(resolveParams(name, given)) ?? false;
}

/**
 * True when a step of the request looks at the asset's focal point (thumbnail, avatar,
 * crop:gravity=focal): only then does delivery read the asset's attributes blob.
 */
export function usesFocalPoint(steps: readonly TransformationStep[]): boolean {
  // The same name/params correlation cast as in planRender.
  return steps.some((step) => stepUsesFocalPoint(step.name, step.params as GivenParams<typeof step.name>));
}

/**
 * Every step's size from the original's header size and the parameters, before any pixel is
 * decoded: the one place where outputs are held to maxOutputPixels and a request to its work
 * budget (maxWorkPixels). Throws TransformationInputError (a 400) naming what is too large.
 */
export function planRender(
  steps: readonly TransformationStep[],
  original: Size,
  limits: MediaLimits,
  output?: PlanOutput,
): RenderPlan {
  const planned: PlannedStep[] = [];
  let size = original;
  let workPixels = 0;
  // Cost in CPU nanoseconds per frame; the most expensive part named when over budget.
  let costNs = 0;
  let worst = { label: "", path: "path", ns: -1 };
  let format = output?.format;
  // Frames every step processes (an animation kept animated); 1 for a still.
  const frames = Math.max(1, output?.frames ?? 1);
  if (output?.drawNsPerPixel) {
    const pixels = original.width * original.height;
    costNs += pixels * output.drawNsPerPixel;
    worst = {
      label: `drawing the PDF page (${megapixels(pixels)} MP)`,
      path: "page.index",
      ns: pixels * output.drawNsPerPixel,
    };
  }
  for (const step of steps) {
    // The step's name and parameters belong together (TransformationStep is a union keyed by
    // name); TypeScript cannot correlate the two members, hence the one cast here.
    const next = planStep(step.name, step.params as GivenParams<typeof step.name>, size, limits) as PlannedStep;
    // Padding and enlarging count: a step costs the larger of the pixels it reads and makes.
    const pixels = Math.max(size.width * size.height, next.output.width * next.output.height);
    workPixels += frames * pixels;
    const ns = pixels * STEP_NS_PER_PIXEL[step.name];
    costNs += ns;
    if (ns > worst.ns) worst = { label: `${step.name} (${megapixels(pixels)} MP)`, path: step.name, ns };
    if (next.name === "format") format = (next.params as ResolvedParams<"format">).type;
    planned.push(next);
    size = next.output;
  }
  if (format) {
    // quality=auto and max-bytes encode more than once (pipeline/encode-search.ts).
    const ns = size.width * size.height * searchedEncoderNsPerPixel(planned, format, output?.avifEffort);
    costNs += ns;
    const label = `encoding ${format}${format === "avif" ? ` at effort ${output?.avifEffort ?? 4}` : ""} (${megapixels(size.width * size.height)} MP)`;
    if (ns > worst.ns) worst = { label, path: steps.some((s) => s.name === "format") ? "format.type" : "path", ns };
  }
  // Once per render, not per frame: the drawing of an SVG, and overlay layers (kept for every frame).
  let onceNs = 0;
  if (output?.svgElements) {
    const ns = svgDrawNs(output.svgElements);
    onceNs += ns;
    if (ns > worst.ns * frames)
      worst = { label: `drawing the SVG (${output.svgElements} elements)`, path: "path", ns: ns / frames };
  }
  if (output?.overlays) {
    const decodes = overlayDecodeNs(planned, output.overlays);
    onceNs += decodes.ns;
    if (decodes.ns > worst.ns * frames) {
      const label = `decoding overlay originals (${decodes.layers} layers, ${megapixels(decodes.pixels)} MP)`;
      worst = { label, path: "overlay.asset", ns: decodes.ns / frames };
    }
  }
  const workCost = (costNs * frames + onceNs) / 1e6;
  if (workPixels > limits.maxWorkPixels) {
    throw new TransformationInputError(
      "path",
      `the steps would process ${workPixels} pixels (${planned
        .map((s) => `${s.name} ${s.input.width}x${s.input.height} -> ${s.output.width}x${s.output.height}`)
        .join(
          ", ",
        )}${frames > 1 ? `, each for ${frames} frames` : ""}), above the work budget of ${limits.maxWorkPixels} pixels per request (maxWorkPixels, MEDIA_MAX_WORK_PIXELS)`,
    );
  }
  if (workCost > limits.maxWorkCost) {
    throw new TransformationInputError(
      worst.path,
      `the request would cost about ${Math.round(workCost)} ms of CPU${frames > 1 ? ` (${frames} frames)` : ""}, above the work budget of ${limits.maxWorkCost} ms per request (maxWorkCost, MEDIA_MAX_WORK_COST); the most expensive step is ${worst.label}, about ${Math.round((worst.ns * frames) / 1e6)} ms`,
    );
  }
  return { steps: planned, workPixels, workCost, heldPixels: heldPixels(planned, original, output?.decode, frames) };
}

const megapixels = (pixels: number): string => (pixels / 1e6).toFixed(1);

import {
  resolveParams,
  type GivenParams,
  type MediaLimits,
  type ResolvedParams,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";
import { transformations } from "../transformations";
import type { Size, Transformation } from "../transformations/transformation";
import { TransformationInputError } from "./errors";

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
  /** Frames every step processes (an animation kept animated); 1 for a still. */
  frames = 1,
): RenderPlan {
  const planned: PlannedStep[] = [];
  let size = original;
  let workPixels = 0;
  for (const step of steps) {
    // The step's name and parameters belong together (TransformationStep is a union keyed by
    // name); TypeScript cannot correlate the two members, hence the one cast here.
    const next = planStep(step.name, step.params as GivenParams<typeof step.name>, size, limits) as PlannedStep;
    workPixels += frames * Math.max(size.width * size.height, next.output.width * next.output.height);
    planned.push(next);
    size = next.output;
  }
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
  return { steps: planned, workPixels };
}

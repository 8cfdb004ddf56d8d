import {
  MediaUrlError,
  defaultMediaLimits,
  formatMediaPath,
  formatOriginalPath,
  parseOriginalPath,
  isTransformationName,
  paramSpecsOf,
  signedMediaUrl,
  unknownParameterMessage,
  unknownTransformationMessage,
  validateMediaRequest,
  type GivenParams,
  type MediaUrlIssue,
  type MediaExtension,
  type MediaLimits,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";

export interface MediaUrlOptions {
  /** Safety caps the media service enforces (default: the service's defaults). */
  limits?: MediaLimits;
  /** MEDIA_SIGNING_KEY of the media service: appends `?sig=<HMAC-SHA256 of the path, base64url>`. */
  signingKey?: string;
  /**
   * With signingKey: the URL answers 403 after this instant (unix seconds or a Date), as
   * `?exp=<seconds>&sig=...` with exp covered by the signature.
   */
  expiresAt?: number | Date;
  /**
   * The asset's version (its `version` field): `?v=<version>`, which the service answers as
   * immutable (a replace makes new URLs). Covered by the signature when signingKey is given.
   */
  version?: number | string;
}

/** `<base><path>`, with the version pin, signed (with the expiry, if any) when a key is given. */
export function withBase(baseUrl: string, path: string, options: MediaUrlOptions): string {
  if (options.expiresAt !== undefined && !options.signingKey) {
    throw new TypeError("expiresAt needs signingKey: an expiry is only enforced on signed URLs");
  }
  const base = baseUrl.replace(/\/+$/, "");
  const { signingKey, expiresAt, version } = options;
  if (signingKey) return `${base}${signedMediaUrl(path, signingKey, { expiresAt, version })}`;
  if (version === undefined) return `${base}${path}`;
  return `${base}${path}${path.includes("?") ? "&" : "?"}v=${encodeURIComponent(String(version))}`;
}

/** One typed step: `step("crop", { width: 200, height: 100 })`. */
export function step<N extends TransformationName>(name: N, params?: GivenParams<N>): TransformationStep {
  return { name, params: params ?? {} } as TransformationStep;
}

/**
 * What formatting would silently drop or crash on when steps come from untyped code (plain JS,
 * JSON): unknown transformations, unknown parameters, values that are neither number nor string.
 * Same messages as the service's URL parser.
 */
function checkShape(steps: readonly TransformationStep[]): void {
  const issues: MediaUrlIssue[] = [];
  for (const s of steps as readonly { name: unknown; params?: unknown }[]) {
    const name = String(s?.name);
    if (!isTransformationName(name)) {
      issues.push({ path: name, message: unknownTransformationMessage(name) });
      continue;
    }
    const params = s.params ?? {};
    if (typeof params !== "object" || params === null || Array.isArray(params)) {
      issues.push({ path: name, message: "params must be an object" });
      continue;
    }
    const specs = paramSpecsOf(name);
    for (const [key, value] of Object.entries(params)) {
      if (!(key in specs)) {
        issues.push({ path: `${name}.${key}`, message: unknownParameterMessage(name) });
      } else if (value !== undefined && typeof value !== "number" && typeof value !== "string") {
        issues.push({ path: `${name}.${key}`, message: "must be a number or a string" });
      } else if (typeof value === "number" && !Number.isFinite(value)) {
        issues.push({ path: `${name}.${key}`, message: "must be a finite number" });
      }
    }
  }
  if (issues.length) throw new MediaUrlError(issues);
}

/**
 * URL of a transformed image: `<baseUrl>/<step>[/<step>...]/<assetId>.<ext>`. The steps are
 * validated with the same rules the media service applies (contracts' validateMediaRequest):
 * an unknown transformation or parameter, a missing required one, or a value out of range
 * throws MediaUrlError naming it. Steps apply left to right.
 */
export function mediaUrl(
  baseUrl: string,
  assetId: string,
  ext: MediaExtension,
  steps: TransformationStep | readonly TransformationStep[],
  options: MediaUrlOptions = {},
): string {
  const list = Array.isArray(steps) ? [...(steps as readonly TransformationStep[])] : [steps as TransformationStep];
  checkShape(list);
  const request = validateMediaRequest({ steps: list, assetId, extension: ext }, options.limits ?? defaultMediaLimits);
  return withBase(baseUrl, formatMediaPath(request), options);
}

/** Chaining form: `new MediaUrlBuilder(base, id, "jpg").add("crop", { width: 200, height: 100 }).add("grayscale").toString()`. */
export class MediaUrlBuilder {
  private readonly steps: TransformationStep[] = [];

  constructor(
    private readonly baseUrl: string,
    private readonly assetId: string,
    private readonly ext: MediaExtension,
    private readonly options: MediaUrlOptions = {},
  ) {}

  /** Appends a step; validation happens in toString(). */
  add<N extends TransformationName>(name: N, params?: GivenParams<N>): this {
    this.steps.push(step(name, params));
    return this;
  }

  toString(): string {
    return mediaUrl(this.baseUrl, this.assetId, this.ext, this.steps, this.options);
  }
}

/**
 * URL of an asset's original bytes: `<baseUrl>/original/<assetId>.<ext>`, with
 * `?download=<filename>` for an attachment download ("" = `<assetId>.<ext>`), signed (and
 * expiring) like media URLs when a key is given.
 */
export function originalUrl(
  baseUrl: string,
  assetId: string,
  ext: MediaExtension,
  options: MediaUrlOptions & { download?: string } = {},
): string {
  const request = parseOriginalPath(formatOriginalPath(assetId, ext));
  return withBase(baseUrl, formatOriginalPath(request.assetId, request.extension, options.download), options);
}

import type { MediaLimits, PresetTable, TransformationStep } from "@media-platform/contracts";
import type { FormatNegotiator } from "../negotiation";
import { presetsOnlyGate } from "../presets";
import type { ConvertTo } from "../render/pipeline/render";
import { InvalidMediaUrlError, QueryNotAllowedError } from "./errors";
import { ParsedMediaPaths, pathOf, type ParsedMediaPath } from "./media-paths";
import { requireSignature, type UrlSigner } from "./signing";

/**
 * A media URL once admitted: what the rest of the request (RenditionService, the answer) reads.
 * Admission runs each check once per request; nothing downstream parses or checks the URL again.
 */
export interface AdmittedRequest {
  readonly assetId: string;
  /** Frozen, shared by every request whose path has these steps (ParsedMediaPaths). */
  readonly steps: readonly TransformationStep[];
  readonly extension: string;
  /** The rendition's cache key (renditionKey): canonical spelling, query as sent, format bucket. */
  readonly key: string;
  /** The canonical spelling of the path (no query). */
  readonly canonical: string;
  /** `Link: <canonical>; rel="canonical"` when the path was another spelling; undefined for the canonical one. */
  readonly link: string | undefined;
  /** The Cache-Control a valid expiring (or signed versioned) URL is answered with; undefined: the entry's. */
  readonly cacheControl: string | undefined;
  /** The negotiated output format (MEDIA_AUTO_FORMAT), when one was chosen. */
  readonly convertTo: ConvertTo | undefined;
  /** Who a render is charged to (MEDIA_CLIENT_SHARE); undefined: nobody. */
  readonly client: string | undefined;
}

/** The rules a media URL is admitted by: the image URL and its GET /info twin share them. */
export interface AdmissionRules {
  /** MEDIA_PRESETS_FILE, validated (default: none). */
  presets?: PresetTable;
  /** MEDIA_PRESETS_ONLY: 403 for every media URL that is not made of presets. */
  presetsOnly?: boolean;
  signer: UrlSigner | undefined;
  /** MEDIA_ALLOW_QUERY: false refuses every query string except a signature (400). Default true. */
  allowQuery?: boolean;
  /** MEDIA_AUTO_FORMAT on: the Accept bucket is part of the cache key. */
  negotiator?: FormatNegotiator;
  /** AVIF encoder effort for negotiated AVIF. */
  avifEffort?: number;
  limits: MediaLimits;
}

/** What admission reads from the request besides its target. */
export interface AdmissionContext {
  /** The Accept header (format negotiation). */
  accept?: string;
  /** Who the request comes from (MEDIA_CLIENT_SHARE). */
  client?: string;
  /** The path already parsed by the direct entry (MediaRoute.match): not parsed again. */
  parsed?: ParsedMediaPath;
}

/**
 * The one cache-key formula: the canonical request-target plus the format bucket (`#avif`,
 * `#webp`) when negotiation chose one. `#` cannot occur in a request-target, so no URL collides
 * with a key. The hot path computes the same key from the raw target: only canonical targets are
 * ever stored, so for them both agree.
 */
export const renditionKey = (target: string, bucket: string | undefined): string =>
  bucket ? `${target}#${bucket}` : target;

/**
 * Admits media URLs: presets-only gate, signature, parse (presets expanded, limits applied),
 * query policy, canonical cache key, negotiated format; in that order, each once. Refusals are
 * thrown (the presets gate and the signature come first, so a refused URL tells nothing about
 * its grammar).
 */
export class MediaAdmission {
  readonly paths: ParsedMediaPaths;
  private readonly allowQuery: boolean;

  constructor(private readonly rules: AdmissionRules) {
    this.paths = new ParsedMediaPaths(rules.presets ?? {}, rules.limits);
    this.allowQuery = rules.allowQuery ?? true;
  }

  /** An image URL's request-target (`req.url`). */
  admit(target: string, context: AdmissionContext): AdmittedRequest {
    const { signer, presetsOnly } = this.rules;
    const path = pathOf(target);
    const refused = presetsOnly ? presetsOnlyGate(target, signer !== undefined) : undefined;
    if (refused) throw refused;
    const cacheControl = signer ? requireSignature(signer, target) : undefined;
    const { request, canonical } = context.parsed ?? this.paths.parse(path);
    const query = target.length > path.length ? target.slice(path.length) : "";
    refuseQuery(path, query, signer !== undefined, this.allowQuery);
    // Another spelling of a valid path is served from the canonical spelling's entry, so one
    // rendition has one entry whatever the client typed; the Link names that spelling.
    const isCanonical = canonical === path;
    const bucket = this.rules.negotiator?.bucket(context.accept);
    return {
      assetId: request.assetId,
      steps: request.steps,
      extension: request.extension,
      key: renditionKey(isCanonical ? target : canonical + query, bucket),
      canonical,
      link: isCanonical ? undefined : canonicalLink(canonical, query, signer !== undefined),
      cacheControl,
      convertTo: bucket ? { format: bucket, avifEffort: this.rules.avifEffort } : undefined,
      client: context.client,
    };
  }

  /**
   * An info URL's request-target (`/info/<steps>/<id>.<ext>[?render=1]`): the same rules, with
   * the query an info URL takes, and the image URL's unsigned canonical key (query left out).
   */
  admitInfo(target: string, accept: string | undefined, prefix: string): { request: AdmittedRequest; render: boolean } {
    const { signer, presetsOnly } = this.rules;
    const mediaPath = pathOf(target).slice(prefix.length);
    const refused = presetsOnly ? presetsOnlyGate(mediaPath) : undefined;
    if (refused) throw refused;
    const cacheControl = signer ? requireSignature(signer, target) : undefined;
    const render = wantsRender(target);
    const { request, canonical } = this.paths.parse(mediaPath);
    const bucket = this.rules.negotiator?.bucket(accept);
    return {
      request: {
        assetId: request.assetId,
        steps: request.steps,
        extension: request.extension,
        key: renditionKey(canonical, bucket),
        canonical,
        link: undefined,
        cacheControl,
        convertTo: bucket ? { format: bucket, avifEffort: this.rules.avifEffort } : undefined,
        client: undefined,
      },
      render,
    };
  }

  /** A path the service names itself (eager renders): parsed, keyed by its canonical spelling, no checks. */
  internal(path: string): AdmittedRequest {
    const { request, canonical } = this.paths.parse(path);
    return {
      assetId: request.assetId,
      steps: request.steps,
      extension: request.extension,
      key: canonical,
      canonical,
      link: undefined,
      cacheControl: undefined,
      convertTo: undefined,
      client: undefined,
    };
  }
}

/**
 * `Link: <canonical>; rel="canonical"` for another spelling of a valid path. The query string
 * stays, except on a signing deployment: its signature covers the path as sent, not the
 * canonical one, so the client signs that path itself.
 */
function canonicalLink(canonical: string, query: string, signing: boolean): string {
  return `<${signing ? canonical : canonical + query}>; rel="canonical"`;
}

/**
 * MEDIA_ALLOW_QUERY=false refuses a media URL with a query string (a cache buster), except on a
 * signing deployment: there the signature check has already limited the query to the signed
 * parameters (exp, download) and sig, all covered by the signature. Without signing, `exp` is
 * refused too (unsigned, it would mean nothing).
 */
function refuseQuery(path: string, query: string, signing: boolean, allowQuery: boolean): void {
  if (query !== "" && !allowQuery && !signing) throw new QueryNotAllowedError(path);
}

/** The query an info URL may carry besides the signature: `render=1`. */
function wantsRender(target: string): boolean {
  const q = target.indexOf("?");
  if (q < 0) return false;
  const query = new URLSearchParams(target.slice(q + 1));
  for (const name of query.keys()) {
    if (!["render", "sig", "exp", "v"].includes(name)) {
      throw new InvalidMediaUrlError(`unknown query parameter ${JSON.stringify(name)} on an info URL`, [
        { path: "query", message: "an info URL takes render=1 (and, signed, exp, v and sig)" },
      ]);
    }
  }
  const render = query.get("render");
  if (render === null) return false;
  if (render !== "1") {
    throw new InvalidMediaUrlError("render must be 1", [{ path: "render", message: "render must be 1 (or left out)" }]);
  }
  return true;
}

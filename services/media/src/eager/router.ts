import express, { Router, type RequestHandler } from "express";
import { DomainError, EAGER_PATH, eagerRequestSchema, type FieldError } from "@media-platform/contracts";
import type { EagerRenderer } from "./eager-renders";

/** A POST /internal/eager body that is not JSON or not {assetId, extension}: answered 400. */
export class EagerRequestError extends DomainError<"invalid-eager-request"> {
  readonly code = "invalid-eager-request";

  constructor(
    message: string,
    private readonly issues?: FieldError[],
  ) {
    super(message);
    this.name = "EagerRequestError";
  }

  override get fields(): FieldError[] | undefined {
    return this.issues;
  }
}

/**
 * POST /internal/eager {assetId, extension, replaced?} with the purge secret as bearer token:
 * management's outbox calls it after an upload or replace. Answers once the eager presets are in
 * the cache tiers: 200 with each URL's outcome; 503 when a render failed for a reason that may
 * pass (the outbox then retries: delivery is at least once, and a repeat finds HITs).
 */
export function eagerRouter(renderer: EagerRenderer, authorize: RequestHandler): Router {
  const r = Router();
  const json = express.json({ limit: "10kb" });
  const parseJson: RequestHandler = (req, res, next) =>
    json(req, res, (err?: unknown) => next(err ? new EagerRequestError("The body is not valid JSON") : undefined));
  r.post(EAGER_PATH, authorize, parseJson, async (req, res) => {
    const parsed = eagerRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      throw new EagerRequestError(
        'Expected {"assetId": <lowercase UUID>, "extension": "jpg"}',
        parsed.error.issues.map((i) => ({ path: ["body", ...i.path].join("."), message: i.message })),
      );
    }
    const { assetId, extension, replaced } = parsed.data;
    const summary = await renderer.render(assetId, extension, replaced === true);
    res.setHeader("Cache-Control", "no-store");
    res.status(summary.retry ? 503 : 200).json({ renders: summary.results });
  });
  return r;
}

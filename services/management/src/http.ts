import type { RequestHandler } from "express";
import { ProblemError } from "./problem";

/** JSON endpoints: a body of another type is a 415, a missing body a 400. */
export const requireJson: RequestHandler = (req, _res, next) => {
  if (req.headers["content-type"] !== undefined && req.is(["application/json", "application/*+json"]) === false) {
    next(new ProblemError(415, "unsupported-media-type", "Content-Type must be application/json"));
    return;
  }
  if (req.body === undefined || req.body === null || typeof req.body !== "object" || Array.isArray(req.body)) {
    next(
      new ProblemError(400, "validation-error", "The body must be a JSON object", {
        errors: [{ path: "body", message: "must be a JSON object" }],
      }),
    );
    return;
  }
  next();
};

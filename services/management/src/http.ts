import type { RequestHandler } from "express";
import { badRequest, problem } from "./problem";

/** JSON endpoints: a body of another type is a 415, a missing body a 400. */
export const requireJson: RequestHandler = (req, _res, next) => {
  if (req.headers["content-type"] !== undefined && req.is(["application/json", "application/*+json"]) === false) {
    next(problem("json-required", "Content-Type must be application/json"));
    return;
  }
  if (req.body === undefined || req.body === null || typeof req.body !== "object" || Array.isArray(req.body)) {
    next(badRequest("The body must be a JSON object", [{ path: "body", message: "must be a JSON object" }]));
    return;
  }
  next();
};

import type { NextFunction, Request, RequestHandler, Response } from "express";
import { problem } from "../problem";
import { isApiKey } from "./api-keys";
import { AuthError, type Principal, type TokenVerifier } from "./keys";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by requireAuth. */
      principal?: Principal;
    }
  }
}

const unauthorized = (detail: string, error?: string) =>
  problem("invalid-token", detail, {
    headers: {
      "WWW-Authenticate": error ? `Bearer realm="media-platform", error="${error}"` : 'Bearer realm="media-platform"',
    },
  });

/**
 * Bearer JWT (or API key, `mpk_...`, checked by `apiKeys`) on every request it guards; sets
 * req.principal. Tokens are never logged.
 */
export function requireAuth(verifier: TokenVerifier, apiKeys?: TokenVerifier): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (!header) {
      next(unauthorized("Missing Authorization header (expected: Bearer <token>)"));
      return;
    }
    const m = /^Bearer[ ]+([A-Za-z0-9\-_=.+/]+)\s*$/i.exec(header);
    if (!m) {
      next(unauthorized("Authorization header must be: Bearer <token>", "invalid_request"));
      return;
    }
    const token = m[1]!;
    (apiKeys && isApiKey(token) ? apiKeys.verify(token) : verifier.verify(token, req.ip)).then(
      (principal) => {
        req.principal = principal;
        next();
      },
      (err: unknown) => {
        next(unauthorized(err instanceof AuthError ? err.message : "invalid token", "invalid_token"));
      },
    );
  };
}

export function principalOf(req: Request): Principal {
  if (!req.principal) throw unauthorized("Not authenticated");
  return req.principal;
}

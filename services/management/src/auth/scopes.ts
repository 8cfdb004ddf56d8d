import type { RequestHandler } from "express";
import { API_SCOPES, type ApiScope } from "@media-platform/contracts";
import { managementRoutes, type ApiRoute } from "@media-platform/contracts/src/openapi";
import { problem } from "../problem";

/**
 * The scopes a token's `scope` claim (space-separated, RFC 8693; or an array) grants: those of
 * API_SCOPES it names. A claim naming none of them (an identity provider's `openid profile`)
 * does not limit the token: undefined, every scope.
 */
export function scopesOfClaim(claim: unknown): readonly ApiScope[] | undefined {
  const words = typeof claim === "string" ? claim.split(/\s+/) : Array.isArray(claim) ? claim : [];
  const granted = API_SCOPES.filter((s) => words.includes(s));
  return granted.length > 0 ? granted : undefined;
}

interface ScopedRoute {
  method: string;
  pattern: RegExp;
  scope: ApiScope;
}

/** `/v1/assets/:assetId` -> /^\/v1\/assets\/[^/]+\/?$/ */
function patternOf(path: string): RegExp {
  const body = path
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}/?$`);
}

/**
 * The scope a request needs, from the route table (packages/contracts: each operation names its
 * scope). A path the table does not know needs `read` to read and `write` for anything else, so
 * a route added without a table entry is never open to a read-only key.
 */
export function scopeResolver(
  routes: readonly ApiRoute[] = managementRoutes,
): (method: string, path: string) => ApiScope {
  const scoped: ScopedRoute[] = routes
    .filter((r) => r.auth && r.scope)
    .map((r) => ({ method: r.method.toUpperCase(), pattern: patternOf(r.path), scope: r.scope! }));
  // Literal paths first: /v1/assets/batch before /v1/assets/:assetId.
  const params = (r: ScopedRoute) => r.pattern.source.split("[^/]+").length;
  scoped.sort((a, b) => params(a) - params(b));
  return (method, path) => {
    const m = method === "HEAD" ? "GET" : method;
    for (const r of scoped) if (r.method === m && r.pattern.test(path)) return r.scope;
    return m === "GET" || m === "OPTIONS" ? "read" : "write";
  };
}

/** After requireAuth: 403 `insufficient-scope`, naming the scope, when the credential lacks it. */
export function requireScope(routes: readonly ApiRoute[] = managementRoutes): RequestHandler {
  const scopeOf = scopeResolver(routes);
  return (req, _res, next) => {
    const granted = req.principal?.scopes;
    if (granted === undefined) {
      next();
      return;
    }
    const needed = scopeOf(req.method, req.baseUrl + req.path);
    if (granted.includes(needed)) {
      next();
      return;
    }
    next(
      problem(
        "insufficient-scope",
        `This operation needs the ${needed} scope; the credential has ${granted.join(", ") || "none"}`,
        {
          extensions: { requiredScope: needed },
          headers: {
            "WWW-Authenticate": `Bearer realm="media-platform", error="insufficient_scope", scope="${needed}"`,
          },
        },
      ),
    );
  };
}

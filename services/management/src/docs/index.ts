import path from "node:path";
import { Router, type RequestHandler } from "express";
import { buildOpenApiDocument, type OpenApiDocument } from "@media-platform/contracts/src/openapi";

/**
 * API documentation, no authentication:
 *   GET /v1/openapi.json   the OpenAPI 3.1 document generated from the zod contracts
 *   GET /docs              interactive reference (Swagger UI, served from node_modules: no CDN)
 *   /docs/assets/*         the renderer's files and our initialiser (static middleware, not routes)
 * Mount before the /v1 auth middleware: `app.use(docsRouter({ publicUrl, mediaUrl }))`.
 */

export const OPENAPI_PATH = "/v1/openapi.json";
export const DOCS_PATH = "/docs";
const ASSETS_PATH = "/docs/assets";

/** Only self: scripts, styles and the spec all come from this origin; no inline script or style. */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  // data: only for the renderer's CSS icons (inline SVG, no origin); every fetched resource is same-origin.
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join("; ");

export interface DocsOptions {
  /** Base URL the API is reached at, for the document's `servers`; default "/" (same origin as the docs). */
  publicUrl?: string;
  /** Public base URL of the media service, mentioned in the document's description. */
  mediaUrl?: string;
}

const SWAGGER_UI_DIR = path.dirname(require.resolve("swagger-ui-dist/package.json"));

/** The renderer's files we serve (not its demo index.html / petstore initialiser). */
const SWAGGER_UI_FILES = new Set(["swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "favicon-16x16.png"]);

const INIT_SCRIPT = `"use strict";
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 1,
    displayOperationId: false,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
`;

const PAGE_STYLE = `body { margin: 0; background: #fafafa; }
.docs-header { font-family: sans-serif; padding: 12px 20px; background: #1b1b1b; color: #fff; }
.docs-header a { color: #9cf; }
`;

function page(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Media Platform API reference</title>
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png">
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
<link rel="stylesheet" href="${ASSETS_PATH}/docs.css">
</head>
<body>
<header class="docs-header">Media Platform management API &middot; <a href="${OPENAPI_PATH}">openapi.json</a></header>
<noscript>This page needs JavaScript; the raw document is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
<div id="swagger-ui" data-spec-url="${OPENAPI_PATH}"></div>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/init.js"></script>
</body>
</html>
`;
}

function securityHeaders(res: Parameters<RequestHandler>[1]): void {
  res.setHeader("Content-Security-Policy", DOCS_CSP);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
}

/** /docs/assets/<file>: the allow-listed renderer files plus our initialiser and stylesheet. */
const assets: RequestHandler = (req, res, next) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    next();
    return;
  }
  const name = req.path.replace(/^\/+/, "");
  securityHeaders(res);
  if (name === "init.js") {
    res.setHeader("Cache-Control", "no-cache");
    res.type("text/javascript").send(INIT_SCRIPT);
    return;
  }
  if (name === "docs.css") {
    res.setHeader("Cache-Control", "no-cache");
    res.type("text/css").send(PAGE_STYLE);
    return;
  }
  if (!SWAGGER_UI_FILES.has(name)) {
    next();
    return;
  }
  res.sendFile(name, { root: SWAGGER_UI_DIR, maxAge: "1h", dotfiles: "deny" }, (err) => {
    if (err && !res.headersSent) next(err);
  });
};

export function docsRouter(options: DocsOptions = {}): Router {
  const document: OpenApiDocument = buildOpenApiDocument({
    serverUrl: options.publicUrl ?? "/",
    mediaUrl: options.mediaUrl,
  });
  const json = JSON.stringify(document);
  const html = page();
  const router = Router();

  router.get(OPENAPI_PATH, (_req, res) => {
    res.setHeader("Cache-Control", "no-cache");
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.type("application/json").send(json);
  });

  router.get(DOCS_PATH, (_req, res) => {
    securityHeaders(res);
    res.setHeader("Cache-Control", "no-cache");
    res.type("text/html").send(html);
  });

  router.use(ASSETS_PATH, assets);
  return router;
}

import express, { type Express, type RequestHandler } from "express";
import { healthRouter, metricsRouter, requestContext } from "@media-platform/observability";
import { assetsRouter, uploadIntake } from "./assets/routes";
import { resumableUploads, type ResumableUploads } from "./assets/tus";
import { uploadGateOf, type UploadGate } from "./assets/upload-intake";
import type { TokenVerifier } from "./auth/keys";
import { ApiKeyAuthenticator } from "./auth/api-keys";
import { requireAuth } from "./auth/middleware";
import { requireScope } from "./auth/scopes";
import { recordSignIns } from "./auth/sign-ins";
import { DEFAULT_API_KEY_CACHE_SECONDS } from "./config";
import { credentialsRouter } from "./credentials/routes";
import { collectionsRouter } from "./collections/routes";
import type { AppContext } from "./context";
import { defaultUploadSettings, uploadsPerWorkspace } from "./config/uploads";
import { docsRouter } from "./docs";
import { libraryRouter, type DevSignIn, type LibraryOptions } from "./library/router";
import { lifecycleRouter } from "./lifecycle/routes";
import { mediaUrlsRouter } from "./media-urls/routes";
import { createManagementMetrics, type ManagementMetrics } from "./metrics";
import { errorHandler, notFoundHandler } from "./problem";

export interface AppDeps extends AppContext {
  verifier: TokenVerifier;
  /** Prometheus metrics served at /metrics; a fresh registry per app when omitted. */
  metrics?: ManagementMetrics;
  /** True while shutting down: /readyz answers 503 `draining` (wired to gracefulShutdown by the server). */
  isDraining?: () => boolean;
  /** Per-check timeout of /readyz. Default 2000 ms. */
  readinessTimeoutMs?: number;
  /** The built library app's folder (library/router.ts findLibraryDir); null or omitted = not built. */
  libraryDir?: string | null;
  /** Verifies API keys (auth/api-keys.ts); one with the default cache bound when omitted. */
  apiKeys?: ApiKeyAuthenticator;
  /** The library's OpenID Connect sign-in (AUTH_OIDC_*); none = not offered. */
  oidc?: LibraryOptions["oidc"];
  /** Requests per credential (auth/rate-limit.ts, RATE_LIMIT_REQUESTS_PER_MINUTE); none = no limit. */
  rateLimit?: RequestHandler;
  /** Embedded authentication only: the library's development sign-in (POST /library/dev-token). */
  devSignIn?: DevSignIn;
  /** tus at /v1/assets/tus (assets/tus.ts); built here when omitted (the server passes its own, which it sweeps). */
  resumable?: ResumableUploads;
  /** The count of uploads in flight, shared by multipart and resumable uploads; built here when omitted. */
  uploadGate?: UploadGate;
}

/** The Express app without a listener: supertest drives it directly. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  // API answers are Cache-Control: no-store, so a validator would only cost a hash of every body.
  app.set("etag", false);

  // Every series exists from the start (metrics.ts), so /metrics shows them before the first event.
  const metrics = deps.metrics ?? createManagementMetrics();
  const apiKeys =
    deps.apiKeys ??
    new ApiKeyAuthenticator(deps.prisma, { cacheMs: DEFAULT_API_KEY_CACHE_SECONDS * 1000, log: deps.log });
  const ctx: AppContext = { ...deps, metrics };

  // Every response, errors and operations endpoints included: never let a browser sniff a type.
  app.use((_req, res, next) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  });

  // Request id (X-Request-Id accepted or generated, echoed), req.log, access line, latency histogram.
  // The access line carries method, route pattern, redacted URL, status, duration: never headers.
  app.use(requestContext({ logger: deps.log, metrics }));

  // Operations: no authentication, no Cache-Control from the /v1 router.
  app.use(metricsRouter(metrics));
  app.use(
    healthRouter({
      checks: {
        database: () => deps.prisma.$queryRaw`SELECT 1`,
        storage: () => deps.blobStore.ping(),
      },
      timeoutMs: deps.readinessTimeoutMs ?? 2000,
      logger: deps.log,
      isDraining: deps.isDraining,
      // Only the failing dependency's name: driver messages carry host and database names.
      exposeErrors: false,
    }),
  );

  // GET /v1/openapi.json and GET /docs: public, so mounted before the /v1 auth middleware.
  app.use(docsRouter({ mediaUrl: deps.mediaPublicUrl }));

  // The media library app: public static files under a strict Content-Security-Policy; it calls
  // /v1 with the token its user pastes (or, in embedded mode only, the development sign-in's).
  app.use(
    libraryRouter({
      dir: deps.libraryDir ?? null,
      mediaPublicUrl: deps.mediaPublicUrl,
      devSignIn: deps.devSignIn,
      oidc: deps.oidc,
      mediaSigned: deps.mediaSigningKey !== undefined,
      uploads: {
        perWorkspace: uploadsPerWorkspace(deps.uploads ?? defaultUploadSettings()),
        maxBytes: deps.maxUploadBytes,
      },
    }),
  );

  // tus: OPTIONS without a token (CORS preflight), the rest with one; bodies are its own.
  const gate = deps.uploadGate ?? uploadGateOf(deps.uploads ?? defaultUploadSettings());
  app.use((deps.resumable ?? resumableUploads(ctx, deps.verifier, gate, apiKeys)).router);

  // Everything else under /v1: a bearer token, JSON bodies.
  const v1 = express.Router();
  // Workspace data: never stored by shared caches, whatever the status.
  v1.use((_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  v1.use(requireAuth(deps.verifier, apiKeys));
  if (deps.rateLimit) v1.use(deps.rateLimit);
  v1.use(recordSignIns(deps.prisma, deps.log));
  // The scope each operation names in the route table (packages/contracts).
  v1.use(requireScope());
  v1.use(express.json({ limit: "100kb", strict: true, type: ["application/json", "application/*+json"] }));
  app.use("/v1", v1);
  // Registered with their full paths (not mounted under a prefix) so every request, failed ones
  // included, is labelled with its documented route pattern in the access log and the metrics.
  const upload = uploadIntake(ctx, gate);
  app.use(assetsRouter(ctx, upload));
  app.use(lifecycleRouter(ctx, upload));
  app.use(collectionsRouter(ctx));
  app.use(mediaUrlsRouter(ctx));
  app.use(credentialsRouter(ctx, apiKeys));

  app.use(notFoundHandler);
  app.use(errorHandler({ log: deps.log, metrics }));
  return app;
}

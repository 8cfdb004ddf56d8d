import express, { type Express } from "express";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { assetsRouter } from "./assets/routes";
import type { TokenVerifier } from "./auth/keys";
import { requireAuth } from "./auth/middleware";
import { collectionsRouter } from "./collections/routes";
import type { AppContext } from "./context";
import { errorHandler, notFoundHandler } from "./problem";

export interface AppDeps extends AppContext {
  verifier: TokenVerifier;
  /** Prometheus registry for /metrics; a fresh one per app when omitted. */
  metrics?: Registry;
}

/** The Express app without a listener: supertest drives it directly. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");

  const registry = deps.metrics ?? new Registry();
  if (!deps.metrics) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "management_http_requests_total",
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "management_http_request_duration_seconds",
    help: "HTTP request duration",
    labelNames: ["method", "route"],
    registers: [registry],
  });

  // Access log + metrics. Only method, path (no query string, no headers: tokens never reach the log).
  app.use((req, res, next) => {
    const start = process.hrtime.bigint();
    res.on("finish", () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = (req.route as { path?: string } | undefined)?.path;
      const routeLabel = route ? `${req.baseUrl}${route}` : "unmatched";
      requests.inc({ method: req.method, route: routeLabel, status: String(res.statusCode) });
      duration.observe({ method: req.method, route: routeLabel }, seconds);
      deps.log.info(
        { method: req.method, path: req.path, status: res.statusCode, ms: Math.round(seconds * 1000) },
        "request",
      );
    });
    next();
  });

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (_req, res) => {
    try {
      await deps.prisma.$queryRaw`SELECT 1`;
      await deps.blobStore.ping();
      res.json({ status: "ready" });
    } catch {
      res.status(503).json({ status: "unavailable" });
    }
  });
  app.get("/metrics", async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });

  const v1 = express.Router();
  // Workspace data: never stored by shared caches, whatever the status.
  v1.use((_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  v1.use(requireAuth(deps.verifier));
  v1.use(express.json({ limit: "100kb", strict: true, type: ["application/json", "application/*+json"] }));
  v1.use("/assets", assetsRouter(deps));
  v1.use("/asset-collections", collectionsRouter(deps));
  app.use("/v1", v1);

  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}

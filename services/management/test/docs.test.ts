import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import express, { type Express, type Router } from "express";
import request from "supertest";
import { problemSchema } from "@media-platform/contracts";
import {
  PROBLEM_RESPONSES,
  PROBLEM_TYPE_BASE,
  managementRoutes,
  toOpenApiPath,
  type ApiRoute,
} from "@media-platform/contracts/src/openapi";
import { defaultTransportsConfig } from "../src/config/transports";
import { DOCS_CSP, docsRouter } from "../src/docs";
import { CHROMIUM, launchChromium } from "../../../test/support/chromium";
import { createTestApp, fixture, type TestApp } from "./helpers";
import { startS3rver, S3RVER_CREDENTIALS, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";

const required = process.env.REQUIRE_SERVICES === "1";

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  rawPath?: unknown;
}

const joinPath = (prefix: string, p: string) => (p === "/" ? prefix || "/" : `${prefix}${p}`);

/** "METHOD /path" for every route registered on an Express 5 router stack, mounted routers included. */
function registeredRoutes(stack: Layer[], prefix = ""): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const p of paths) {
        for (const method of Object.keys(layer.route.methods).filter((m) => m !== "_all")) {
          out.push(`${method.toUpperCase()} ${joinPath(prefix, p)}`);
        }
      }
    } else if (layer.handle?.stack) {
      if (typeof layer.rawPath !== "string")
        throw new Error("cannot read the mount path of a router (Express internals changed?)");
      out.push(...registeredRoutes(layer.handle.stack, joinPath(prefix, layer.rawPath === "/" ? "" : layer.rawPath)));
    }
  }
  return out;
}

const appStack = (app: Express): Layer[] => (app as unknown as { router: { stack: Layer[] } }).router.stack;
const routerStack = (router: Router): Layer[] => (router as unknown as { stack: Layer[] }).stack;

/** The management app as served: it mounts the public docs router itself, in front of the authenticated /v1 router. */
const served = (t: TestApp): Express => t.app;

const routeKey = (r: ApiRoute) => `${r.method.toUpperCase()} ${r.path}`;
const documented = (r: ApiRoute) => [...Object.keys(r.responses), ...r.problems, ...(r.auth ? [401] : [])].map(Number);

describe("docs router (bare)", () => {
  const app = express();
  app.use(docsRouter({ publicUrl: "https://api.example.test/", mediaUrl: "https://media.example.test" }));
  app.use((_req, res) => {
    res.status(404).send("fell through");
  });

  it("serves the OpenAPI 3.1 document at /v1/openapi.json without authentication", async () => {
    const res = await request(app).get("/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.body.openapi).toBe("3.1.0");
    expect(res.body.servers).toEqual([{ url: "https://api.example.test", description: "Management API" }]);
    expect(res.body.info.description).toContain("https://media.example.test/<transformation>");
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(["/v1/assets/upload", "/v1/asset-collections"]));
    expect(res.body.components.securitySchemes.bearerAuth.scheme).toBe("bearer");
  });

  it("defaults the server URL to the same origin", async () => {
    const bare = express().use(docsRouter());
    expect((await request(bare).get("/v1/openapi.json")).body.servers[0].url).toBe("/");
  });

  it("serves the API reference page with a self-only Content-Security-Policy and only local scripts", async () => {
    const res = await request(app).get("/docs");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    const csp = res.headers["content-security-policy"] as string;
    expect(csp).toBe(DOCS_CSP);
    const directives = Object.fromEntries(csp.split(/;\s*/).map((d) => [d.split(" ")[0], d.split(" ").slice(1)]));
    expect(directives["default-src"]).toEqual(["'self'"]);
    expect(directives["script-src"]).toEqual(["'self'"]);
    expect(directives["style-src"]).toEqual(["'self'"]);
    expect(directives["connect-src"]).toEqual(["'self'"]);
    expect(directives["object-src"]).toEqual(["'none'"]);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    const scripts = [...res.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => /src="([^"]+)"/.exec(m[1]!)?.[1])).toEqual([
      "/docs/assets/swagger-ui-bundle.js",
      "/docs/assets/init.js",
    ]);
    for (const m of scripts) expect(m[2]!.trim()).toBe(""); // no inline script
    expect(res.text).not.toMatch(/<style|style="/); // no inline style
    expect(res.text).not.toMatch(/(src|href)="(https?:)?\/\//); // nothing from another origin
    expect(res.text).toContain('data-spec-url="/v1/openapi.json"');
  });

  it("serves the renderer from node_modules and our initialiser, and nothing else from that folder", async () => {
    const bundle = await request(app).get("/docs/assets/swagger-ui-bundle.js");
    expect(bundle.status).toBe(200);
    expect(bundle.headers["content-type"]).toMatch(/javascript/);
    expect(Number(bundle.headers["content-length"])).toBeGreaterThan(100_000);
    expect((await request(app).get("/docs/assets/swagger-ui.css")).headers["content-type"]).toMatch(/^text\/css/);
    const init = await request(app).get("/docs/assets/init.js");
    expect(init.status).toBe(200);
    expect(init.text).toContain("SwaggerUIBundle(");
    expect(init.text).toContain("validatorUrl: null"); // never calls the public validator
    for (const other of [
      "index.html",
      "swagger-initializer.js",
      "package.json",
      "../package.json",
      "%2e%2e/package.json",
    ]) {
      const res = await request(app).get(`/docs/assets/${other}`);
      expect([other, res.text]).toEqual([other, "fell through"]);
    }
  });
});

describe("route table vs the management app", () => {
  let t: TestApp;
  let app: Express;
  let source: http.Server;
  let sourcePort: number;
  // Direct uploads need the S3 driver: a second app on s3rver.
  let s3: RunningS3rver;
  let onS3: TestApp;
  beforeAll(async () => {
    s3 = await startS3rver({ bucket: "docs-direct" });
    onS3 = await createTestApp({
      s3: {
        bucket: s3.bucket,
        region: "us-east-1",
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: { ...S3RVER_CREDENTIALS },
      },
    });
    // The source of POST /v1/assets/import (allowed: loopback is refused otherwise).
    source = http.createServer((_req, res) =>
      res.writeHead(200, { "Content-Type": "image/jpeg" }).end(fixture("rocket.jpg")),
    );
    await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve));
    sourcePort = (source.address() as AddressInfo).port;
    const transports = defaultTransportsConfig(fs.mkdtempSync(path.join(os.tmpdir(), "docs-transports-")));
    t = await createTestApp({
      transports: { ...transports, import: { ...transports.import, allowedHosts: [`127.0.0.1:${sourcePort}`] } },
    });
    app = served(t);
  });
  afterAll(async () => {
    source.close();
    await t.close();
    await onS3.close();
    await s3.stop();
  });

  it("documents every route the app registers, and the app registers every documented route", () => {
    // GET / only redirects a browser to the library (not an API route, like the library's pages).
    const list = registeredRoutes(appStack(t.app)).filter((r) => r !== "GET /");
    // Each route once: no home-grown /healthz or /metrics next to the shared observability routers.
    expect(list.filter((r, i) => list.indexOf(r) !== i)).toEqual([]);
    const registered = new Set(list);
    // The docs router's own routes are all registered by the app.
    for (const r of registeredRoutes(routerStack(docsRouter()))) expect(registered).toContain(r);
    const table = new Set(managementRoutes.map(routeKey));
    expect([...registered].filter((r) => !table.has(r)).sort()).toEqual([]);
    expect([...table].filter((r) => !registered.has(r)).sort()).toEqual([]);
    expect(registered).toContain("POST /v1/assets/upload");
    expect(registered).toContain("DELETE /v1/asset-collections/:id");
    for (const op of ["GET /healthz", "GET /readyz", "GET /metrics", "GET /v1/openapi.json", "GET /docs"])
      expect(registered).toContain(op);
  });

  it("answers 401 problem+json without a token exactly on the routes documented with the bearer scheme", async () => {
    const id = "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
    for (const route of managementRoutes) {
      const url = route.path.replace(/:[A-Za-z]+/g, id);
      const res = await request(app)[route.method](url);
      if (route.auth) {
        expect([routeKey(route), res.status, res.headers["content-type"]]).toEqual([
          routeKey(route),
          401,
          expect.stringMatching(/^application\/problem\+json/),
        ]);
        expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
      } else {
        // Public routes answer their documented success (OPTIONS of the resumable uploads: 204).
        expect([routeKey(route), res.status]).toEqual([routeKey(route), Number(Object.keys(route.responses)[0])]);
      }
    }
  });

  it("answers a bare authenticated request to every route with a documented status and body", async () => {
    const agent = t.as("ws-docs-bare");
    const id = "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
    for (const route of managementRoutes.filter((r) => r.auth)) {
      if (route.method === "options") continue; // public: the test above
      const res = await agent[route.method](route.path.replace(/:[A-Za-z]+/g, id));
      expect([routeKey(route), documented(route)]).toEqual([routeKey(route), expect.arrayContaining([res.status])]);
      const success = route.responses[res.status];
      if (success?.schema) expect(success.schema.safeParse(res.body).error).toBeUndefined();
      // A HEAD answer has headers only.
      if (res.status >= 400 && route.method !== "head") {
        expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
        expect(problemSchema.safeParse(res.body).error).toBeUndefined();
      }
    }
  });

  it("reaches every documented success status, with bodies matching the documented schemas", async () => {
    const route = (key: string) => {
      const found = managementRoutes.find((r) => routeKey(r) === key);
      if (!found) throw new Error(`no route ${key}`);
      return found;
    };
    const seen = new Set<string>();
    const check = (key: string, res: request.Response) => {
      const r = route(key);
      const response = r.responses[res.status];
      expect([key, res.status, response ? "documented" : "undocumented"]).toEqual([key, res.status, "documented"]);
      if (response?.schema) expect([key, response.schema.safeParse(res.body).error]).toEqual([key, undefined]);
      if (response?.location) expect(res.headers.location).toMatch(/^\/v1\//);
      if (res.status < 300 && !response?.schema && !response?.contentType) expect(res.text ?? "").toBe("");
      seen.add(`${key} ${res.status}`);
    };
    const agent = t.as("ws-docs-flow");
    const created = await agent.post("/v1/asset-collections").send({ name: "Docs" });
    check("POST /v1/asset-collections", created);
    const uploaded = await agent
      .post("/v1/assets/upload")
      .field("warnAboutDuplicateImages", "true")
      .field("collectionId", created.body.id)
      .attach("file", fixture("rocket.jpg"), { filename: "rocket.jpg", contentType: "image/jpeg" });
    check("POST /v1/assets/upload", uploaded);
    const assetId = uploaded.body.id as string;
    check("GET /v1/assets/:assetId", await agent.get(`/v1/assets/${assetId}`));
    check(
      "PATCH /v1/assets/:assetId",
      await agent.patch(`/v1/assets/${assetId}`).send({ userTitle: "Launch pad", userTags: ["rocket"] }),
    );
    check("GET /v1/assets", await agent.get("/v1/assets?limit=5&sort=-createdAt"));
    check("GET /v1/assets/search/full-text", await agent.get("/v1/assets/search/full-text?q=launch"));
    check("GET /v1/asset-collections", await agent.get("/v1/asset-collections"));
    check("DELETE /v1/asset-collections/:id", await agent.delete(`/v1/asset-collections/${created.body.id}`));
    check(
      "PUT /v1/assets/:assetId/original",
      await agent.put(`/v1/assets/${assetId}/original`).attach("file", fixture("astronaut.png"), "astronaut.png"),
    );
    check("GET /v1/assets/:assetId/versions", await agent.get(`/v1/assets/${assetId}/versions`));
    check(
      "POST /v1/assets/:assetId/versions/:version/restore",
      await agent.post(`/v1/assets/${assetId}/versions/1/restore`),
    );
    check(
      "POST /v1/assets/batch",
      await agent.post("/v1/assets/batch").send({ action: "addTags", ids: [assetId], value: ["x"] }),
    );
    check(
      "POST /v1/media-urls/sign",
      await agent.post("/v1/media-urls/sign").send({ path: `/thumbnail:size=64/${assetId}.png` }),
    );
    check(
      "POST /v1/media-urls/sign-batch",
      await agent.post("/v1/media-urls/sign-batch").send({ paths: [`/thumbnail:size=64/${assetId}.png`] }),
    );
    check("DELETE /v1/assets/:assetId", await agent.delete(`/v1/assets/${assetId}`));
    check("GET /v1/assets/:assetId/trash-thumbnail", await agent.get(`/v1/assets/${assetId}/trash-thumbnail`));
    check("POST /v1/assets/:assetId/restore", await agent.post(`/v1/assets/${assetId}/restore`));
    check(
      "POST /v1/assets/import",
      await agent.post("/v1/assets/import").send({ url: `http://127.0.0.1:${sourcePort}/rocket.jpg` }),
    );
    // A resumable upload: created, its offset asked, abandoned; another one sent whole.
    const tus = (req: request.Test) => req.set("Tus-Resumable", "1.0.0");
    const rocket = fixture("rocket.jpg");
    const meta = `filename ${Buffer.from("rocket.jpg").toString("base64")}`;
    const createdUpload = await tus(agent.post("/v1/assets/tus"))
      .set("Upload-Length", String(rocket.length))
      .set("Upload-Metadata", meta);
    check("POST /v1/assets/tus", createdUpload);
    const uploadUrl = createdUpload.headers.location as string;
    check("HEAD /v1/assets/tus/:uploadId", await tus(agent.head(uploadUrl)));
    check("DELETE /v1/assets/tus/:uploadId", await tus(agent.delete(uploadUrl)));
    const whole = await tus(agent.post("/v1/assets/tus"))
      .set("Upload-Length", String(rocket.length))
      .set("Upload-Metadata", meta);
    check(
      "PATCH /v1/assets/tus/:uploadId",
      await tus(agent.patch(whole.headers.location as string))
        .set("Content-Type", "application/offset+octet-stream")
        .set("Upload-Offset", "0")
        .send(rocket),
    );
    const key = await agent.post("/v1/api-keys").send({ name: "docs", scopes: ["read"] });
    check("POST /v1/api-keys", key);
    check("GET /v1/api-keys", await agent.get("/v1/api-keys"));
    check("DELETE /v1/api-keys/:id", await agent.delete(`/v1/api-keys/${key.body.id}`));
    check("GET /v1/usage", await agent.get("/v1/usage"));
    check("PUT /v1/usage/quotas", await agent.put("/v1/usage/quotas").send({ assets: 1000 }));
    check("GET /v1/audit-events", await agent.get("/v1/audit-events"));
    // A direct upload: created and aborted; another one completed.
    const onS3Agent = onS3.as("ws-docs-flow");
    const direct = { filename: "rocket.jpg", size: rocket.length, contentType: "image/jpeg" };
    const aborted = await onS3Agent.post("/v1/assets/direct-uploads").send(direct);
    check("POST /v1/assets/direct-uploads", aborted);
    check(
      "DELETE /v1/assets/direct-uploads/:uploadId",
      await onS3Agent.delete(`/v1/assets/direct-uploads/${aborted.body.id}`),
    );
    const sent = await onS3Agent.post("/v1/assets/direct-uploads").send(direct);
    const part = await fetch(sent.body.parts[0].url, { method: "PUT", body: rocket });
    check(
      "POST /v1/assets/direct-uploads/:uploadId/complete",
      await onS3Agent
        .post(`/v1/assets/direct-uploads/${sent.body.id}/complete`)
        .send({ parts: [{ partNumber: 1, etag: part.headers.get("etag") }] }),
    );
    for (const r of managementRoutes.filter((x) => !x.auth)) {
      const path = r.path.replace(":uploadId", "0".repeat(32));
      const res = await (r.method === "options" ? request(app).options(path) : request(app).get(path));
      check(routeKey(r), res);
    }
    const expected = managementRoutes.flatMap((r) =>
      Object.keys(r.responses)
        .map(Number)
        .filter((s) => s < 300)
        .map((s) => `${routeKey(r)} ${s}`),
    );
    expect([...seen].sort()).toEqual(expected.sort());
  });

  it("documents the problem statuses the app actually sends for bad input", async () => {
    const agent = t.as("ws-docs-errors");
    const cases: [string, number, request.Test][] = [
      [
        "POST /v1/assets/upload",
        415,
        agent.post("/v1/assets/upload").attach("file", Buffer.from("plain text, not an image"), "notes.txt"),
      ],
      [
        "POST /v1/assets/upload",
        422,
        agent.post("/v1/assets/upload").attach("file", fixture("truncated.jpg"), "truncated.jpg"),
      ],
      ["POST /v1/assets/upload", 400, agent.post("/v1/assets/upload").field("collectionId", "nope")],
      ["GET /v1/assets", 400, agent.get("/v1/assets?limit=1000")],
      ["GET /v1/assets/search/full-text", 400, agent.get("/v1/assets/search/full-text")],
      ["POST /v1/asset-collections", 415, agent.post("/v1/asset-collections").type("text/plain").send("name=x")],
      [
        "PATCH /v1/assets/:assetId",
        404,
        agent.patch("/v1/assets/0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f").send({ userTitle: "x" }),
      ],
    ];
    await agent.post("/v1/asset-collections").send({ name: "Twice" });
    cases.push(["POST /v1/asset-collections", 409, agent.post("/v1/asset-collections").send({ name: "Twice" })]);
    for (const [key, status, req] of cases) {
      const r = managementRoutes.find((x) => routeKey(x) === key)!;
      const res = await req;
      expect([key, res.status]).toEqual([key, status]);
      expect([key, r.problems]).toEqual([key, expect.arrayContaining([status])]);
      // the documented example carries the type URI and title the service really sends
      const example = PROBLEM_RESPONSES[status as keyof typeof PROBLEM_RESPONSES].example;
      expect([key, res.body.type, res.body.title]).toEqual([key, `${PROBLEM_TYPE_BASE}${example.slug}`, example.title]);
    }
    // 401 too
    const anonymous = await request(app).get("/v1/assets");
    expect(anonymous.body).toMatchObject({ type: `${PROBLEM_TYPE_BASE}unauthorized`, title: "Unauthorized" });
  });
});

describe("API reference in a browser", () => {
  const haveChromium = fs.existsSync(CHROMIUM);
  // The one documented skip: no Debian chromium on this machine (CI installs it; REQUIRE_SERVICES=1 makes it a failure).
  const maybe = haveChromium || required ? it : it.skip;
  const skipNote = haveChromium ? "" : ` (${CHROMIUM} not installed)`;

  maybe(
    `lists the endpoints in headless Chromium, loading everything from the same origin without CSP violations${skipNote}`,
    async () => {
      if (!haveChromium)
        throw new Error(`REQUIRE_SERVICES=1 but ${CHROMIUM} is not installed (apt-get install chromium)`);
      const t = await createTestApp();
      const server = http.createServer(served(t));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const context = await launchChromium("docs");
      try {
        const page = context.pages()[0] ?? (await context.newPage());
        const consoleErrors: string[] = [];
        const requested: string[] = [];
        page.on("console", (m) => {
          if (m.type() === "error") consoleErrors.push(m.text());
        });
        page.on("pageerror", (e) => consoleErrors.push(e.message));
        page.on("request", (r) => requested.push(r.url()));
        const response = await page.goto(`${origin}/docs`);
        expect(response?.status()).toBe(200);
        await page.waitForSelector(".opblock-summary-path", { timeout: 30_000 });
        const listed = await page.$$eval(".opblock-summary-path", (els) =>
          els.map(
            (e) =>
              `${e.closest(".opblock")?.querySelector(".opblock-summary-method")?.textContent ?? ""} ${e.getAttribute("data-path")}`,
          ),
        );
        const expected = managementRoutes.map((r) => `${r.method.toUpperCase()} ${toOpenApiPath(r.path)}`);
        expect(listed.sort()).toEqual(expected.sort());
        expect(listed).toEqual(
          expect.arrayContaining(["POST /v1/assets/upload", "GET /v1/asset-collections", "POST /v1/asset-collections"]),
        );
        expect(await page.textContent(".info .title")).toContain("Media Platform management API");
        expect(consoleErrors).toEqual([]);
        expect(requested.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:"))).toEqual([]);
        expect(requested).toContain(`${origin}/v1/openapi.json`);
      } finally {
        await context.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await t.close();
      }
    },
  );
});

import express from "express";
import request from "supertest";
import { createLogger, createMetrics, requestContext, MAX_REQUEST_ID_LENGTH } from "../src";
import { captureStream } from "./helpers";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const JWT =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTEiLCJ3b3Jrc3BhY2VfaWQiOiJ3cy0xIn0.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Ng";
const SIG = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

function makeApp() {
  const capture = captureStream();
  const logger = createLogger({ service: "test", level: "debug", destination: capture.stream });
  const app = express();
  app.use(requestContext({ logger }));
  app.get("/echo", (req, res) => {
    res.json({ requestId: req.requestId, locals: res.locals.requestId });
  });
  app.get("/noisy", (req, res) => {
    // Handlers logging carelessly: the header, the whole query, an error carrying the token.
    req.log.info({ headers: req.headers, query: req.query }, `auth header was ${req.headers.authorization}`);
    req.log.error({ err: new Error(`upstream rejected Bearer ${JWT}`) }, "upstream failed");
    res.status(204).end();
  });
  app.get("/:steps/:asset", (_req, res) => {
    res.status(200).send("img");
  });
  return { app, capture };
}

describe("request id", () => {
  it("generates a UUID when none is sent, returns it and exposes it to handlers", async () => {
    const { app } = makeApp();
    const res = await request(app).get("/echo").expect(200);
    const id = res.headers["x-request-id"];
    expect(id).toMatch(UUID_RE);
    expect(res.body).toEqual({ requestId: id, locals: id });
  });

  it("accepts a sane incoming X-Request-Id and echoes it", async () => {
    const { app } = makeApp();
    for (const sent of ["abc-123", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "req_1.2:3/4+5=@x"]) {
      const res = await request(app).get("/echo").set("X-Request-Id", sent).expect(200);
      expect(res.headers["x-request-id"]).toBe(sent);
      expect(res.body.requestId).toBe(sent);
    }
  });

  it("rejects malformed ids (too long, bad characters, empty) and generates a fresh one", async () => {
    const { app } = makeApp();
    const bad = [
      "a".repeat(MAX_REQUEST_ID_LENGTH + 1),
      "has space",
      'quote"d',
      "new\tline",
      "<script>",
      "-leading-dash",
      "ünïcode",
      "",
    ];
    for (const sent of bad) {
      const res = await request(app).get("/echo").set("X-Request-Id", sent).expect(200);
      expect(res.headers["x-request-id"]).not.toBe(sent);
      expect(res.headers["x-request-id"]).toMatch(UUID_RE);
    }
    // The longest allowed id is still accepted.
    const longest = "b".repeat(MAX_REQUEST_ID_LENGTH);
    const ok = await request(app).get("/echo").set("X-Request-Id", longest).expect(200);
    expect(ok.headers["x-request-id"]).toBe(longest);
  });

  it("gives concurrent requests distinct ids", async () => {
    const { app } = makeApp();
    const ids = await Promise.all(Array.from({ length: 20 }, () => request(app).get("/echo"))).then((rs) =>
      rs.map((r) => r.headers["x-request-id"]),
    );
    expect(new Set(ids).size).toBe(20);
  });
});

describe("access log", () => {
  it("writes one JSON line per request with method, route pattern, status, duration and request id", async () => {
    const { app, capture } = makeApp();
    await request(app).get("/thumbnail:size=256/1234.jpg").set("X-Request-Id", "trace-1").expect(200);
    const access = capture.lines().filter((l) => l.msg === "request completed");
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({
      level: "info",
      service: "test",
      requestId: "trace-1",
      method: "GET",
      route: "/:steps/:asset",
      url: "/thumbnail:size=256/1234.jpg",
      status: 200,
    });
    expect(typeof access[0].durationMs).toBe("number");
    expect(typeof access[0].time).toBe("string");
    expect(access[0]).not.toHaveProperty("headers");
  });

  it("never logs the Authorization value, cookies or sig query values", async () => {
    const { app, capture } = makeApp();
    await request(app)
      .get(`/noisy?sig=${SIG}&width=10&token=${JWT}`)
      .set("Authorization", `Bearer ${JWT}`)
      .set("Cookie", "session=s3cr3t-cookie-value")
      .expect(204);
    await request(app).get(`/thumbnail/abc.jpg?sig=${SIG}`).set("Authorization", `Bearer ${JWT}`).expect(200);
    const raw = capture.raw();
    expect(raw).not.toContain(JWT);
    expect(raw).not.toContain(JWT.split(".")[1]);
    expect(raw).not.toContain(SIG);
    expect(raw).not.toContain("s3cr3t-cookie-value");
    // What remains is useful: the line exists, non-secret params survive, redaction is visible.
    const lines = capture.lines();
    const access = lines.filter((l) => l.msg === "request completed");
    expect(access.map((l) => l.url)).toEqual([
      "/noisy?sig=[REDACTED]&width=10&token=[REDACTED]",
      "/thumbnail/abc.jpg?sig=[REDACTED]",
    ]);
    const noisy = lines.find((l) => typeof l.msg === "string" && l.msg.startsWith("auth header was"));
    expect(noisy?.msg).toBe("auth header was Bearer [REDACTED]");
    expect((noisy?.headers as Record<string, string>).authorization).toBe("[REDACTED]");
    expect((noisy?.headers as Record<string, string>).cookie).toBe("[REDACTED]");
    expect((noisy?.query as Record<string, string>).width).toBe("10");
    const failure = lines.find((l) => l.msg === "upstream failed");
    expect((failure?.err as { message: string }).message).toBe("upstream rejected Bearer [REDACTED]");
  });

  it("logs 4xx at warn and 5xx at error, probes at debug", async () => {
    const capture = captureStream();
    const logger = createLogger({ service: "t", level: "debug", destination: capture.stream });
    const app = express();
    app.use(requestContext({ logger }));
    app.get("/healthz", (_req, res) => {
      res.send("ok");
    });
    app.get("/boom", () => {
      throw new Error("boom");
    });
    await request(app).get("/healthz").expect(200);
    await request(app).get("/missing").expect(404);
    await request(app).get("/boom").expect(500);
    const levels = capture
      .lines()
      .filter((l) => l.msg === "request completed")
      .map((l) => [l.route, l.status, l.level]);
    expect(levels).toEqual([
      ["/healthz", 200, "debug"],
      ["unmatched", 404, "warn"],
      ["/boom", 500, "error"],
    ]);
  });

  it("records the request in the latency histogram when metrics are given", async () => {
    const metrics = createMetrics({ service: "t", defaultMetrics: false });
    const logger = createLogger({ service: "t", level: "silent" });
    const app = express();
    app.use(requestContext({ logger, metrics }));
    app.get("/a/:id", (_req, res) => {
      res.send("x");
    });
    await request(app).get("/a/1").expect(200);
    await request(app).get("/a/2").expect(200);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'http_request_duration_seconds_count{route="/a/:id",method="GET",status_code="200",service="t"} 2',
    );
  });
});

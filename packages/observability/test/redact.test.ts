import { createLogger, redactUrl, sanitize, scrubString } from "../src";
import { captureStream } from "./helpers";

const JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhYmMiLCJleHAiOjF9.QmFzZTY0U2lnbmF0dXJlVmFsdWU";

describe("scrubString / redactUrl", () => {
  it.each([
    [`Authorization: Bearer ${JWT}`, "Authorization: Bearer [REDACTED]"],
    ["Basic dXNlcjpwYXNzd29yZA==", "Basic [REDACTED]"],
    [`token was ${JWT} here`, "token was [REDACTED] here"],
    ["postgres://app:hunter2@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"],
    ["redis://:p4ss@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"],
    ["/thumbnail/a.jpg?sig=abc123&w=1", "/thumbnail/a.jpg?sig=[REDACTED]&w=1"],
    ["/x?a=1&SIG=abc", "/x?a=1&SIG=[REDACTED]"],
    [
      "/o?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA%2F",
      "/o?X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]",
    ],
  ])("%s", (input, expected) => {
    expect(scrubString(input)).toBe(expected);
  });

  it("leaves ordinary text and URLs alone", () => {
    for (const s of [
      "Token expired",
      "missing Bearer token",
      "/v1/assets?search=cat&limit=10",
      "/thumbnail:size=256/3f1c1b1e-1111-4111-8111-111111111111.jpg",
      "http://localhost:3001/x",
    ]) {
      expect(scrubString(s)).toBe(s);
    }
    expect(redactUrl("/v1/assets/abc")).toBe("/v1/assets/abc");
  });
});

describe("sanitize", () => {
  it("redacts credential keys at any depth without mutating the input", () => {
    const input = {
      user: "u1",
      headers: { Authorization: "Bearer x", "x-api-key": "k", accept: "*/*" },
      nested: [
        { accessToken: "t", refresh_token: "r", clientSecret: "s", password: "p", sig: "q", cacheKey: "/a/b.jpg" },
      ],
      empty: { token: "" },
    };
    const copy = JSON.parse(JSON.stringify(input));
    const out = sanitize(input);
    expect(input).toEqual(copy);
    expect(out).toEqual({
      user: "u1",
      headers: { Authorization: "[REDACTED]", "x-api-key": "[REDACTED]", accept: "*/*" },
      nested: [
        {
          accessToken: "[REDACTED]",
          refresh_token: "[REDACTED]",
          clientSecret: "[REDACTED]",
          password: "[REDACTED]",
          sig: "[REDACTED]",
          cacheKey: "/a/b.jpg",
        },
      ],
      empty: { token: "" },
    });
  });

  it("returns the same reference when nothing needs redaction and survives cycles", () => {
    const clean = { a: 1, b: ["x", { c: "y" }] };
    expect(sanitize(clean)).toBe(clean);
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect(() => sanitize(cyclic)).not.toThrow();
  });
});

describe("createLogger", () => {
  it("writes JSON lines with level label, ISO time and service, scrubbing printf args, bindings and errors", () => {
    const capture = captureStream();
    const log = createLogger({ service: "media", level: "info", destination: capture.stream });
    const child = log.child({ upstream: "redis://:childsecret@cache:6379" });
    child.info("connecting to %s with %s", "postgres://u:pw123456@db/x", `Bearer ${JWT}`);
    child.warn(
      { config: { REDIS_URL: "redis://:cfgsecret@r:6379", MEDIA_SIGNING_KEY: "signkey", port: 3001 } },
      "config",
    );
    const err = Object.assign(new Error(`bad token ${JWT}`), { authorization: "Bearer zzz" });
    child.error(err, "failed");
    child.debug({ token: "debug-level-not-written" }, "dropped");
    const raw = capture.raw();
    for (const secret of ["childsecret", "pw123456", JWT, "cfgsecret", "signkey", "zzz", "debug-level-not-written"]) {
      expect(raw).not.toContain(secret);
    }
    const lines = capture.lines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      level: "info",
      service: "media",
      msg: "connecting to postgres://u:[REDACTED]@db/x with Bearer [REDACTED]",
    });
    expect(new Date(lines[0].time as string).toISOString()).toBe(lines[0].time);
    expect(lines[1]).toMatchObject({ level: "warn", config: { port: 3001, MEDIA_SIGNING_KEY: "[REDACTED]" } });
    expect(lines[2]).toMatchObject({
      level: "error",
      err: { type: "Error", message: "bad token [REDACTED]", authorization: "[REDACTED]" },
    });
  });
});

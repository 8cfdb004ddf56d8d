import { generateKeyPairSync } from "node:crypto";
import jwt from "jsonwebtoken";
import { createVerifier } from "../src/auth/keys";
import { ConfigError, loadConfig } from "../src/config";

/** The time claims (iat, exp, nbf) with a clock-skew leeway, and the audience an identity provider's token must carry. */
const secret = "a-test-secret-of-enough-length-0123456789";
const hs = (options: Parameters<typeof createVerifier>[1] = { workspaceClaim: "workspace_id" }) =>
  createVerifier({ kind: "secret", secret, embedded: false }, options);
const now = () => Math.floor(Date.now() / 1000);
/** Exactly the claims given: jsonwebtoken adds iat unless told not to (and then drops a given one). */
const sign = (claims: Record<string, unknown>) =>
  jwt.sign({ workspace_id: "ws-claims", ...claims }, secret, { noTimestamp: !("iat" in claims) });
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (err: Error) => err.message,
  );

describe("iat and the lifetime cap", () => {
  it("a token issued in the future cannot stretch the cap: exp - iat within 24 h, but iat a year ahead, is a 401", async () => {
    const iat = now() + 365 * 86_400;
    expect(await outcome(hs().verify(sign({ iat, exp: iat + 3600 })))).toBe("token issued in the future (iat)");
    // Ten seconds ahead is clock skew, not forgery.
    expect(await outcome(hs().verify(sign({ iat: now() + 10, exp: now() + 3600 })))).toBe("ok");
    expect(await outcome(hs().verify(sign({ iat: now() + 60, exp: now() + 3600 })))).toBe(
      "token issued in the future (iat)",
    );
  });

  it("with a cap, iat is required; a token older than the cap is refused even when it has no exp", async () => {
    expect(await outcome(hs().verify(sign({ exp: now() + 600 })))).toBe("token has no iat claim");
    const lenient = hs({ workspaceClaim: "workspace_id", requireExpiry: false, maxLifetimeSeconds: 600 });
    expect(await outcome(lenient.verify(sign({ iat: now() - 700 })))).toBe("token older than the maximum lifetime");
    expect(await outcome(lenient.verify(sign({ iat: now() - 500 })))).toBe("ok");
    // No cap: neither iat nor exp is needed.
    const uncapped = hs({ workspaceClaim: "workspace_id", requireExpiry: false, maxLifetimeSeconds: 0 });
    expect(await outcome(uncapped.verify(sign({})))).toBe("ok");
  });
});

describe("clock-skew leeway (AUTH_CLOCK_SKEW_SECONDS)", () => {
  it("exp and nbf are checked with the default 30 s leeway", async () => {
    const v = hs();
    expect(await outcome(v.verify(sign({ iat: now() - 100, exp: now() - 10 })))).toBe("ok");
    expect(await outcome(v.verify(sign({ iat: now() - 100, exp: now() - 60 })))).toBe("token expired");
    expect(await outcome(v.verify(sign({ iat: now(), nbf: now() + 10, exp: now() + 600 })))).toBe("ok");
    expect(await outcome(v.verify(sign({ iat: now(), nbf: now() + 60, exp: now() + 600 })))).toBe(
      "token not yet valid",
    );
  });

  it("a configured leeway of 0 is exact", async () => {
    const v = hs({ workspaceClaim: "workspace_id", clockSkewSeconds: 0 });
    expect(await outcome(v.verify(sign({ iat: now() - 100, exp: now() - 10 })))).toBe("token expired");
    expect(await outcome(v.verify(sign({ iat: now() + 10, exp: now() + 600 })))).toBe(
      "token issued in the future (iat)",
    );
  });

  it("is read from AUTH_CLOCK_SKEW_SECONDS, default 30, bounded to 0-300", () => {
    expect(loadConfig({ DATA_DIR: "/tmp/x" }).auth.clockSkewSeconds).toBe(30);
    expect(loadConfig({ DATA_DIR: "/tmp/x", AUTH_CLOCK_SKEW_SECONDS: "0" }).auth.clockSkewSeconds).toBe(0);
    expect(loadConfig({ DATA_DIR: "/tmp/x", AUTH_CLOCK_SKEW_SECONDS: "300" }).auth.clockSkewSeconds).toBe(300);
    for (const bad of ["301", "-1", "ten"])
      expect(() => loadConfig({ AUTH_CLOCK_SKEW_SECONDS: bad })).toThrow(/AUTH_CLOCK_SKEW_SECONDS/);
  });
});

describe("aud with an identity provider's key", () => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pem = publicKey.export({ type: "spki", format: "pem" }) as string;
  const es = (claims: Record<string, unknown>) =>
    jwt.sign({ workspace_id: "ws-claims", ...claims }, privateKey, { algorithm: "ES256", expiresIn: 600 });

  it("AUTH_PUBLIC_KEY or AUTH_JWKS_URL without AUTH_AUDIENCE is a configuration error naming AUTH_AUDIENCE", () => {
    for (const env of [{ AUTH_PUBLIC_KEY: pem }, { AUTH_JWKS_URL: "https://idp.example.com/jwks" }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/AUTH_AUDIENCE/);
      expect(loadConfig({ ...env, AUTH_AUDIENCE: "media-api" }).auth.audience).toBe("media-api");
    }
    // An HS256 secret is this API's own: no audience needed.
    expect(loadConfig({ AUTH_JWT_SECRET: secret }).auth.audience).toBeUndefined();
    expect(() => createVerifier({ kind: "publicKey", pem }, { workspaceClaim: "workspace_id" })).toThrow(
      /audience is required/,
    );
    expect(() =>
      createVerifier({ kind: "jwks", url: "https://idp.example.com/jwks" }, { workspaceClaim: "workspace_id" }),
    ).toThrow(/audience is required/);
  });

  it("a token without aud, or for another API, is refused; one for this API is accepted", async () => {
    const v = createVerifier({ kind: "publicKey", pem }, { workspaceClaim: "workspace_id", audience: "media-api" });
    expect(await outcome(v.verify(es({})))).toBe("wrong token audience");
    expect(await outcome(v.verify(es({ aud: "billing-api" })))).toBe("wrong token audience");
    expect(await outcome(v.verify(es({ aud: "media-api" })))).toBe("ok");
    expect(await outcome(v.verify(es({ aud: ["billing-api", "media-api"] })))).toBe("ok");
  });
});

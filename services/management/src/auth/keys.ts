import { createPublicKey, createSecretKey } from "node:crypto";
import path from "node:path";
import jwt, { type Algorithm, type JwtHeader } from "jsonwebtoken";
import type JwksRsa from "jwks-rsa";
import { embeddedSharedSecret, MIN_SECRET_BYTES, readSecretFile } from "@media-platform/storage";
import { DEFAULT_CLOCK_SKEW_SECONDS, DEFAULT_MAX_TOKEN_LIFETIME_SECONDS, type ManagementConfig } from "../config";
import { nativeRequire } from "../native-require";
import { JwksKeySet, SIGNING_KEY_ERRORS } from "./jwks-key-set";
import type { ManagementErrorCode } from "../domain-errors";
import { DomainError, type ApiScope } from "@media-platform/contracts";
import { scopesOfClaim } from "./scopes";

export const EMBEDDED_SECRET_FILE = "auth-secret";

const ASYMMETRIC: Algorithm[] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"];

/** Where the token signing material comes from. */
export type KeySource =
  | { kind: "secret"; secret: string; embedded: boolean }
  | { kind: "publicKey"; pem: string }
  | { kind: "jwks"; url: string };

/**
 * Reads (or creates on first start) the embedded HS256 secret in DATA_DIR, mode 0600.
 * `create: false` returns null when it does not exist yet.
 */
export function embeddedSecret(dataDir: string, create = true): string | null {
  if (create) return embeddedSharedSecret(dataDir, EMBEDDED_SECRET_FILE, 48);
  return readSecretFile(path.join(dataDir, EMBEDDED_SECRET_FILE)) || null;
}

export function resolveKeySource(config: Pick<ManagementConfig, "auth" | "dataDir">): KeySource {
  const { auth } = config;
  if (auth.jwksUrl) return { kind: "jwks", url: auth.jwksUrl };
  if (auth.publicKey) return { kind: "publicKey", pem: auth.publicKey.replace(/\\n/g, "\n") };
  if (auth.jwtSecret) return { kind: "secret", secret: auth.jwtSecret, embedded: false };
  return { kind: "secret", secret: embeddedSecret(config.dataDir)!, embedded: true };
}

/**
 * jwks-rsa 4 depends on jose 6, which is ESM-only. Node >= 20.19 loads it through require(esm),
 * but jest's module registry cannot; loading jwks-rsa with Node's own require works in both.
 */
function loadJwksRsa(): typeof JwksRsa {
  return nativeRequire<typeof JwksRsa>("jwks-rsa");
}

export interface Principal {
  workspaceId: string;
  userId: string | null;
  /** What the credential may do (auth/scopes.ts); undefined = every scope (a token without a scope claim). */
  scopes?: readonly ApiScope[];
  /** Set when the credential is an API key (auth/api-keys.ts). */
  apiKeyId?: string;
  /** A token's `auth_time` (else `iat`), seconds: when its holder signed in (auth/sign-ins.ts). */
  signedInAt?: number;
}

/** A token that does not prove who calls (answered 401 by the auth middleware). */
export class AuthError extends DomainError<ManagementErrorCode> {
  readonly code = "invalid-token";
  constructor(message: string) {
    super(message);
    this.name = "AuthError";
  }
}

export interface TokenVerifier {
  /** `client` (the caller's address) counts unknown JWKS kids per client (jwks-key-set.ts). */
  verify(token: string, client?: string): Promise<Principal>;
}

export interface VerifierOptions {
  issuer?: string;
  audience?: string;
  workspaceClaim: string;
  /** Refuse tokens without an `exp` claim (they would be valid forever). Default true. */
  requireExpiry?: boolean;
  /**
   * Longest accepted lifetime, `exp - iat`, in seconds; 0 = no cap. With a cap, `iat` is required,
   * may not lie in the future, and a token older than the cap is refused even without `exp`.
   * Default DEFAULT_MAX_TOKEN_LIFETIME_SECONDS.
   */
  maxLifetimeSeconds?: number;
  /** Leeway for exp, nbf and iat against this clock. Default DEFAULT_CLOCK_SKEW_SECONDS. */
  clockSkewSeconds?: number;
  /** JWKS only: age after which the key set is refreshed (its kids still served meanwhile). Default 10 min. */
  jwksMaxAgeMs?: number;
}

export function createVerifier(source: KeySource, options: VerifierOptions): TokenVerifier {
  const requireExpiry = options.requireExpiry ?? true;
  const maxLifetime = options.maxLifetimeSeconds ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS;
  const clockSkew = options.clockSkewSeconds ?? DEFAULT_CLOCK_SKEW_SECONDS;
  // Tokens of an identity provider are also issued for other APIs: only `aud` tells them apart.
  if (source.kind !== "secret" && !options.audience)
    throw new AuthError(`an audience is required with ${source.kind === "jwks" ? "a JWKS" : "a public key"}`);
  let getKey: (client: string) => jwt.Secret | jwt.GetPublicKeyOrSecret;
  let algorithms: Algorithm[];
  // Keys are turned into KeyObjects once: given a string, jsonwebtoken parses it on every verify
  // (for a secret it first tries, and fails, to read it as a public key: ~15% of a search
  // request's CPU).
  if (source.kind === "secret") {
    // A short or empty key would still sign and verify: refuse it however it was configured.
    if (Buffer.byteLength(source.secret, "utf8") < MIN_SECRET_BYTES)
      throw new AuthError(`the HS256 secret is shorter than ${MIN_SECRET_BYTES} bytes`);
    const key = createSecretKey(Buffer.from(source.secret, "utf8"));
    getKey = () => key;
    algorithms = ["HS256", "HS384", "HS512"];
  } else if (source.kind === "publicKey") {
    const key = createPublicKey(source.pem);
    getKey = () => key;
    algorithms = ASYMMETRIC;
  } else {
    // jwks-rsa only fetches and parses; which kid may cause a fetch, and when, is the key set's.
    const client = new (loadJwksRsa().JwksClient)({
      jwksUri: source.url,
      cache: false,
      rateLimit: false,
      timeout: 5000,
    });
    const keySet = new JwksKeySet(client, { maxAgeMs: options.jwksMaxAgeMs });
    getKey = (clientId) => (header: JwtHeader, cb) => {
      keySet.key(header.kid, clientId).then(
        (key) => cb(null, key),
        (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
      );
    };
    algorithms = ASYMMETRIC;
  }
  const verifyOptions: jwt.VerifyOptions & { complete?: false } = { algorithms, clockTolerance: clockSkew };
  // jsonwebtoken refuses a token without iat, or older than maxAge (+ clockTolerance) since its iat.
  if (maxLifetime > 0) verifyOptions.maxAge = maxLifetime;
  if (options.issuer) verifyOptions.issuer = options.issuer;
  if (options.audience) verifyOptions.audience = options.audience;

  return {
    verify(token: string, client = ""): Promise<Principal> {
      return new Promise((resolve, reject) => {
        jwt.verify(token, getKey(client), verifyOptions, (err, payload) => {
          if (err) {
            reject(new AuthError(describeJwtError(err)));
            return;
          }
          if (typeof payload !== "object" || payload === null) {
            reject(new AuthError("token payload is not a JSON object"));
            return;
          }
          const claims = payload as Record<string, unknown>;
          const lifetimeProblem = checkLifetime(claims, requireExpiry, maxLifetime, clockSkew);
          if (lifetimeProblem) {
            reject(new AuthError(lifetimeProblem));
            return;
          }
          const ws = claims[options.workspaceClaim];
          // eslint-disable-next-line no-control-regex
          if (typeof ws !== "string" || ws.length === 0 || ws.length > 200 || /[\u0000-\u001f\u007f]/.test(ws)) {
            reject(new AuthError(`token lacks the ${options.workspaceClaim} claim`));
            return;
          }
          const sub = claims.sub;
          // eslint-disable-next-line no-control-regex
          const userId = typeof sub === "string" && sub.length <= 255 && !/[\u0000]/.test(sub) ? sub : null;
          const signedInAt = typeof claims.auth_time === "number" ? claims.auth_time : claims.iat;
          const scopes = scopesOfClaim(claims.scope);
          resolve({
            workspaceId: ws,
            userId,
            ...(scopes && { scopes }),
            ...(typeof signedInAt === "number" && { signedInAt }),
          });
        });
      });
    },
  };
}

/**
 * jsonwebtoken checks `exp`, `nbf` and the age since `iat` (maxAge); this refuses a missing `exp`,
 * overlong lifetimes and an `iat` in the future, which would otherwise move the whole window, and
 * with it the cap, as far ahead as the issuer likes.
 */
function checkLifetime(
  claims: Record<string, unknown>,
  requireExpiry: boolean,
  maxLifetime: number,
  clockSkew: number,
): string | null {
  const { exp, iat } = claims;
  if (iat !== undefined && (typeof iat !== "number" || !Number.isFinite(iat))) return "token iat claim is not a number";
  if (typeof iat === "number" && iat > Date.now() / 1000 + clockSkew) return "token issued in the future (iat)";
  if (exp === undefined) return requireExpiry ? "token has no exp claim" : null;
  if (typeof exp !== "number" || !Number.isFinite(exp)) return "token exp claim is not a number";
  if (maxLifetime <= 0 || typeof iat !== "number") return null;
  return exp - iat > maxLifetime ? `token lifetime exceeds the maximum of ${maxLifetime} seconds` : null;
}

function describeJwtError(err: Error): string {
  // jsonwebtoken wraps the key lookup's error: "error in secret or public key callback: <message>".
  const lookup = /public key callback: (.*)$/.exec(err.message)?.[1];
  if (lookup && SIGNING_KEY_ERRORS.has(lookup)) return lookup;
  if (err.name === "TokenExpiredError")
    return err.message === "maxAge exceeded" ? "token older than the maximum lifetime" : "token expired";
  if (/iat required/.test(err.message)) return "token has no iat claim";
  if (err.name === "NotBeforeError") return "token not yet valid";
  const msg = err.message;
  if (/jwt malformed|invalid token|jwt must be/i.test(msg)) return "malformed token";
  if (/signature/i.test(msg)) return "invalid token signature";
  if (/issuer/i.test(msg)) return "wrong token issuer";
  if (/audience/i.test(msg)) return "wrong token audience";
  if (/algorithm/i.test(msg)) return "token algorithm not accepted";
  return "invalid token";
}

/** Signs a token with an HS256 secret (embedded mode and AUTH_JWT_SECRET); used by `pnpm run token`. */
export function signToken(
  secret: string,
  claims: {
    workspaceId: string;
    sub?: string;
    ttl?: string | number;
    workspaceClaim?: string;
    issuer?: string;
    audience?: string;
  },
): string {
  const options: jwt.SignOptions = {
    algorithm: "HS256",
    expiresIn: (claims.ttl ?? "1h") as jwt.SignOptions["expiresIn"],
  };
  if (claims.sub) options.subject = claims.sub;
  if (claims.issuer) options.issuer = claims.issuer;
  if (claims.audience) options.audience = claims.audience;
  return jwt.sign({ [claims.workspaceClaim ?? "workspace_id"]: claims.workspaceId }, secret, options);
}

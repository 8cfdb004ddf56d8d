import fs from "node:fs";
import path from "node:path";
import express, { Router, type Request } from "express";
import { devTokenRequestSchema, type DevTokenResponse } from "@media-platform/contracts";
import { signToken } from "../auth/keys";
import { parseOr400, problem } from "../problem";

/** Where the browser app is served. */
export const LIBRARY_PATH = "/library";

/** The development sign-in: only given when the embedded (DATA_DIR) secret signs the tokens. */
export interface DevSignIn {
  secret: string;
  workspaceClaim: string;
  ttlSeconds: number;
  issuer?: string;
  audience?: string;
}

export interface LibraryOptions {
  /** Folder of the built app (index.html + assets/); null = not built (503 naming the build command). */
  dir: string | null;
  /** Public base URL of the media service: the page may load images from it and fetch it. */
  mediaPublicUrl: string;
  devSignIn?: DevSignIn;
  /** The API signs media URLs (MEDIA_SIGNING_KEY): the page asks it for every URL it shows. */
  mediaSigned?: boolean;
  /** The OpenID Connect sign-in (AUTH_OIDC_*): the page signs people in at the provider. */
  oidc?: {
    issuer: string;
    clientId: string;
    scopes: string;
    resource?: string;
    providerName: string;
    workspaceClaim: string;
  };
  /** What the upload queue is sized to: uploads one workspace may have in flight, and the size cap. */
  uploads?: { perWorkspace: number; maxBytes: number };
}

/**
 * The built app: next to the bundle in production (scripts/build.ts copies it to
 * dist/library), the package's Vite output in development. null when neither has an index.html.
 */
export function findLibraryDir(): string | null {
  const candidates = [path.join(__dirname, "library"), path.resolve(__dirname, "../../../../apps/library/dist")];
  return candidates.find((dir) => fs.existsSync(path.join(dir, "index.html"))) ?? null;
}

/**
 * The page may run only its own scripts, and talk to and show images from itself and the media
 * service; nothing else (no third party, no inline script, no framing).
 */
export function libraryContentSecurityPolicy(mediaPublicUrl: string, oidcIssuer?: string): string {
  const media = new URL(mediaPublicUrl).origin;
  // The provider's discovery document, token and keys are fetched by the page.
  const provider = oidcIssuer ? ` ${new URL(oidcIssuer).origin}` : "";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' ${media} data: blob:`,
    `connect-src 'self' ${media}${provider}`,
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

const escapeAttribute = (value: string): string =>
  value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * Only a browser on this machine may mint a development token, whatever HOST the service binds:
 * the connection comes from loopback, the browser addressed a loopback name, and nothing
 * forwarded it. A reverse proxy or tunnel on the host connects over loopback too, but it keeps
 * the public Host or adds a Forwarded / X-Forwarded-* header, and is refused.
 */
const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;
const isLoopback = (req: Request): boolean =>
  LOOPBACK.has(req.socket.remoteAddress ?? "") &&
  LOOPBACK_HOST.test(req.headers.host ?? "") &&
  !Object.keys(req.headers).some((name) => name === "forwarded" || name.startsWith("x-forwarded-"));

/**
 * GET /: a redirect to /library. GET /library: the media library app (its settings passed as
 * <meta> tags, since the policy forbids inline scripts); /library/assets/*: its hashed files;
 * POST /library/dev-token: the development sign-in, registered only when `devSignIn` is given.
 */
export function libraryRouter(options: LibraryOptions): Router {
  const r = Router();
  // The service's root is where a browser lands first: the library, not a 404 problem.
  r.get("/", (_req, res) => {
    res.setHeader("Cache-Control", "no-cache");
    res.redirect(302, LIBRARY_PATH);
  });
  const csp = libraryContentSecurityPolicy(options.mediaPublicUrl, options.oidc?.issuer);
  r.use(LIBRARY_PATH, (_req, res, next) => {
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("Referrer-Policy", "no-referrer");
    res.setHeader("X-Frame-Options", "DENY");
    next();
  });

  if (options.devSignIn) {
    const dev = options.devSignIn;
    r.use(`${LIBRARY_PATH}/dev-token`, express.json({ limit: "1kb", strict: true }), (req, res, next) => {
      if (req.method !== "POST") {
        next();
        return;
      }
      if (!isLoopback(req)) {
        throw problem(
          "forbidden",
          "The development sign-in answers only a browser on this machine: a loopback Host (localhost, 127.0.0.1 or [::1]) and no Forwarded or X-Forwarded-* header",
        );
      }
      const input = parseOr400(devTokenRequestSchema, req.body ?? {}, "body");
      const token = signToken(dev.secret, {
        workspaceId: input.workspaceId,
        sub: "library-dev",
        ttl: dev.ttlSeconds,
        workspaceClaim: dev.workspaceClaim,
        issuer: dev.issuer,
        audience: dev.audience,
      });
      const body: DevTokenResponse = {
        token,
        workspaceId: input.workspaceId,
        expiresAt: new Date(Date.now() + dev.ttlSeconds * 1000).toISOString(),
      };
      res.setHeader("Cache-Control", "no-store");
      res.json(body);
    });
  }

  const meta =
    `<meta name="media-url" content="${escapeAttribute(options.mediaPublicUrl)}">` +
    (options.devSignIn ? `<meta name="dev-sign-in" content="true">` : "") +
    (options.mediaSigned ? `<meta name="media-signed" content="true">` : "") +
    (options.oidc
      ? `<meta name="oidc-issuer" content="${escapeAttribute(options.oidc.issuer)}">` +
        `<meta name="oidc-client-id" content="${escapeAttribute(options.oidc.clientId)}">` +
        `<meta name="oidc-scopes" content="${escapeAttribute(options.oidc.scopes)}">` +
        `<meta name="oidc-provider-name" content="${escapeAttribute(options.oidc.providerName)}">` +
        `<meta name="workspace-claim" content="${escapeAttribute(options.oidc.workspaceClaim)}">` +
        (options.oidc.resource ? `<meta name="oidc-resource" content="${escapeAttribute(options.oidc.resource)}">` : "")
      : "") +
    (options.uploads
      ? `<meta name="upload-concurrency" content="${options.uploads.perWorkspace}">` +
        `<meta name="max-upload-bytes" content="${options.uploads.maxBytes}">`
      : "");
  r.use(LIBRARY_PATH, (req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      next();
      return;
    }
    if (req.path !== "/" && req.path !== "/index.html") {
      next();
      return;
    }
    if (!options.dir) {
      throw problem(
        "library-not-built",
        "The library app is not built: run `pnpm build:library` (pnpm start builds it)",
      );
    }
    const html = fs.readFileSync(path.join(options.dir, "index.html"), "utf8").replace("</head>", `${meta}</head>`);
    res.setHeader("Cache-Control", "no-cache");
    res.type("html").send(html);
  });
  if (options.dir) {
    // Vite names every file after its content hash: cached for a year.
    r.use(
      `${LIBRARY_PATH}/assets`,
      express.static(path.join(options.dir, "assets"), {
        index: false,
        dotfiles: "ignore",
        fallthrough: true,
        immutable: true,
        maxAge: "365d",
      }),
    );
    r.use(LIBRARY_PATH, express.static(options.dir, { index: false, dotfiles: "ignore", fallthrough: true }));
  }
  return r;
}

import { ApiError, MediaPlatformClient } from "@media-platform/client";
import { OidcSession, type OidcSettings } from "./oidc";
import { describeApiRefusal } from "./sign-in-errors";
import { signal } from "./signal";

/** Settings the management service writes into the page as <meta> tags (no inline script under the CSP). */
function meta(name: string): string | null {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? null;
}

export const settings = {
  /** Public base URL of the media service. */
  mediaUrl: (meta("media-url") ?? "http://localhost:3001").replace(/\/+$/, ""),
  /** The embedded mode's development sign-in is on. */
  devSignIn: meta("dev-sign-in") === "true",
  /** The management API: the page's own origin. */
  apiUrl: window.location.origin,
  /** The deployment signs media URLs: every one the page shows comes from POST /v1/media-urls/sign-batch. */
  mediaSigned: meta("media-signed") === "true",
  /** Uploads one workspace may have in flight (the upload queue's size). */
  uploadConcurrency: positive(meta("upload-concurrency"), 4),
  /** The server's upload size cap. */
  maxUploadBytes: positive(meta("max-upload-bytes"), 50 * 1024 * 1024),
  /** The deployment's OpenID Connect provider (AUTH_OIDC_*); null = none. */
  oidc: oidcSettings(),
};

function oidcSettings(): OidcSettings | null {
  const issuer = meta("oidc-issuer");
  const clientId = meta("oidc-client-id");
  if (!issuer || !clientId) return null;
  return {
    issuer,
    clientId,
    scopes: meta("oidc-scopes") ?? "openid",
    resource: meta("oidc-resource"),
    providerName: meta("oidc-provider-name") ?? new URL(issuer).hostname,
    workspaceClaim: meta("workspace-claim") ?? "workspace_id",
  };
}

function positive(value: string | null, fallback: number): number {
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** sessionStorage: the token lives as long as the tab, never in a URL or a cookie. */
const TOKEN_KEY = "media-library-token";

export const token = signal<string | null>(sessionStorage.getItem(TOKEN_KEY));

export function signIn(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
  token.set(value);
}

export function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  token.set(null);
}

/** What the sign-in page says about a sign-in that went wrong (at the provider, or refused by the API). */
export const signInMessage = signal<string | null>(null);

/** The provider sign-in; null when the deployment has none. */
export const oidc = settings.oidc
  ? new OidcSession(settings.oidc, (value) => (value ? signIn(value) : signOut()))
  : null;

/** The Sign out button: here, and at the provider when signed in there. */
export function endSession(): void {
  if (oidc && sessionStorage.getItem("media-library-oidc")) void oidc.signOut();
  else signOut();
}

/**
 * At page load: finishes a return from the provider (one cheap call proves the token before the
 * library opens), or resumes the tab's provider session. Resolves to a message for the sign-in
 * page when something went wrong.
 */
export async function resumeSession(): Promise<string | null> {
  if (!oidc) return null;
  try {
    if (await oidc.complete()) {
      try {
        await client.listCollections();
      } catch (err) {
        const detail = describeError(err);
        signOut();
        sessionStorage.removeItem("media-library-oidc");
        return describeApiRefusal(detail, oidc.settings);
      }
      return null;
    }
    oidc.resume();
    return null;
  } catch (err) {
    signOut();
    return err instanceof Error ? err.message : String(err);
  }
}

/** Every API call goes through this: a 401 ends the session and shows the sign-in again. */
export const client = new MediaPlatformClient({
  baseUrl: settings.apiUrl,
  token: () => token.get() ?? "",
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    if (response.status === 401) signOut();
    return response;
  },
});

/** The development sign-in (embedded authentication only). */
export async function devSignIn(workspaceId: string): Promise<void> {
  const response = await fetch(`${settings.apiUrl}/library/dev-token`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(workspaceId ? { workspaceId } : {}),
  });
  const body = (await response.json()) as { token?: string; detail?: string };
  if (!response.ok || !body.token) throw new Error(body.detail ?? `sign-in failed (${response.status})`);
  signIn(body.token);
}

/** The message to show for a failed call: the server's problem detail when there is one. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.problem.detail ?? error.problem.title;
  return error instanceof Error ? error.message : String(error);
}

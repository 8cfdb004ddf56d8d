import * as oauth from "oauth4webapi";

/**
 * Sign-in at the deployment's OpenID Connect provider: authorization code with PKCE (S256) through
 * the provider's discovery document, with oauth4webapi. Tokens stay in sessionStorage (this tab);
 * the access token is renewed with the refresh token before it expires; sign-out ends the
 * provider's session too when it offers RP-initiated logout.
 */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  scopes: string;
  resource: string | null;
  providerName: string;
  workspaceClaim: string;
}

interface StoredTokens {
  accessToken: string;
  refreshToken?: string;
  idToken?: string;
  /** ms since the epoch */
  expiresAt?: number;
}

const PENDING_KEY = "media-library-oidc-pending";
const TOKENS_KEY = "media-library-oidc";
/** Renew when this share of the token's lifetime has passed. */
const RENEW_AT = 0.75;

const redirectUri = () => `${window.location.origin}/library`;

export class OidcSession {
  private server: oauth.AuthorizationServer | undefined;
  private readonly client: oauth.Client;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly settings: OidcSettings,
    private readonly onToken: (token: string | null) => void,
  ) {
    this.client = { client_id: settings.clientId };
  }

  private async discover(): Promise<oauth.AuthorizationServer> {
    if (this.server) return this.server;
    const issuer = new URL(this.settings.issuer);
    const response = await oauth.discoveryRequest(issuer, {
      algorithm: "oidc",
      [oauth.allowInsecureRequests]: issuer.protocol === "http:",
    });
    this.server = await oauth.processDiscoveryResponse(issuer, response);
    return this.server;
  }

  private get options() {
    return { [oauth.allowInsecureRequests]: new URL(this.settings.issuer).protocol === "http:" };
  }

  /** Goes to the provider's sign-in page. */
  async start(): Promise<void> {
    const as = await this.discover();
    if (!as.authorization_endpoint) throw new Error(`${this.settings.providerName} has no authorization endpoint`);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    sessionStorage.setItem(PENDING_KEY, JSON.stringify({ codeVerifier, state }));
    const url = new URL(as.authorization_endpoint);
    url.searchParams.set("client_id", this.client.client_id);
    url.searchParams.set("redirect_uri", redirectUri());
    url.searchParams.set("response_type", "code");
    url.searchParams.set("scope", this.settings.scopes);
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set("code_challenge_method", "S256");
    url.searchParams.set("state", state);
    if (this.settings.resource) {
      url.searchParams.set("resource", this.settings.resource);
      url.searchParams.set("audience", this.settings.resource);
    }
    window.location.assign(url.href);
  }

  /**
   * On the page the provider sent back to (`?code=...&state=...` or `?error=...`): exchanges the
   * code for tokens. Returns false when this page load is not such a return.
   */
  async complete(): Promise<boolean> {
    const current = new URL(window.location.href);
    if (!current.searchParams.has("state") && !current.searchParams.has("error")) return false;
    const pending = sessionStorage.getItem(PENDING_KEY);
    sessionStorage.removeItem(PENDING_KEY);
    // The code, state or error never stay in the address bar or the history.
    window.history.replaceState(null, "", `${current.pathname}${current.hash}`);
    if (!pending) throw new Error("The sign-in was not started from this tab; try again");
    const { codeVerifier, state } = JSON.parse(pending) as { codeVerifier: string; state: string };
    const as = await this.discover();
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, this.client, current, state);
    } catch (err) {
      throw new Error(describeProviderError(err, this.settings.providerName), { cause: err });
    }
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      this.client,
      oauth.None(),
      params,
      redirectUri(),
      codeVerifier,
      this.options,
    );
    try {
      this.keep(await oauth.processAuthorizationCodeResponse(as, this.client, response));
    } catch (err) {
      throw new Error(describeProviderError(err, this.settings.providerName), { cause: err });
    }
    return true;
  }

  /** After a reload: the tab's tokens, renewed on schedule. */
  resume(): string | null {
    const stored = this.stored();
    if (!stored) return null;
    if (stored.expiresAt !== undefined && stored.expiresAt <= Date.now()) {
      // Expired while the tab slept: renewed now when it can be, else signed out.
      if (stored.refreshToken) void this.renew();
      else this.clear();
      return null;
    }
    this.schedule(stored);
    return stored.accessToken;
  }

  /** Ends the session here and, when the provider offers it, there (RP-initiated logout). */
  async signOut(): Promise<void> {
    const stored = this.stored();
    this.clear();
    const as = await this.discover().catch(() => undefined);
    if (!as?.end_session_endpoint) return;
    const url = new URL(as.end_session_endpoint);
    if (stored?.idToken) url.searchParams.set("id_token_hint", stored.idToken);
    url.searchParams.set("client_id", this.client.client_id);
    url.searchParams.set("post_logout_redirect_uri", redirectUri());
    window.location.assign(url.href);
  }

  private stored(): StoredTokens | null {
    const raw = sessionStorage.getItem(TOKENS_KEY);
    return raw ? (JSON.parse(raw) as StoredTokens) : null;
  }

  private keep(result: oauth.TokenEndpointResponse): void {
    const previous = this.stored();
    const tokens: StoredTokens = {
      accessToken: result.access_token,
      refreshToken: result.refresh_token ?? previous?.refreshToken,
      idToken: result.id_token ?? previous?.idToken,
      expiresAt: result.expires_in !== undefined ? Date.now() + result.expires_in * 1000 : undefined,
    };
    sessionStorage.setItem(TOKENS_KEY, JSON.stringify(tokens));
    this.onToken(tokens.accessToken);
    this.schedule(tokens);
  }

  private schedule(tokens: StoredTokens): void {
    clearTimeout(this.renewTimer);
    if (!tokens.refreshToken || tokens.expiresAt === undefined) return;
    const left = tokens.expiresAt - Date.now();
    this.renewTimer = setTimeout(() => void this.renew(), Math.max(0, left * RENEW_AT));
  }

  /** Silent renewal with the refresh token; a refusal ends the session (sign in again). */
  async renew(): Promise<void> {
    const stored = this.stored();
    if (!stored?.refreshToken) return;
    try {
      const as = await this.discover();
      const response = await oauth.refreshTokenGrantRequest(
        as,
        this.client,
        oauth.None(),
        stored.refreshToken,
        this.options,
      );
      this.keep(await oauth.processRefreshTokenResponse(as, this.client, response));
    } catch {
      this.clear();
    }
  }

  private clear(): void {
    clearTimeout(this.renewTimer);
    sessionStorage.removeItem(TOKENS_KEY);
    this.onToken(null);
  }
}

/** What went wrong at the provider, in words for the person signing in. */
export function describeProviderError(err: unknown, provider: string): string {
  if (err instanceof oauth.AuthorizationResponseError) {
    if (err.error === "access_denied")
      return `Sign-in was cancelled at ${provider}, or consent was not given. Try again, and allow access.`;
    if (err.error === "login_required" || err.error === "consent_required")
      return `${provider} needs you to sign in again.`;
    return `${provider} refused the sign-in: ${err.error_description ?? err.error}`;
  }
  if (err instanceof oauth.ResponseBodyError)
    return `${provider} refused the sign-in: ${err.error_description ?? err.error}`;
  return `Sign-in with ${provider} failed: ${err instanceof Error ? err.message : String(err)}`;
}

// A real OpenID Connect provider process for tests (started by oidc-provider.ts): oidc-provider on
// a free loopback port, its options as JSON in argv[2]; prints the issuer URL once it listens.
import http from "node:http";
import process from "node:process";
import Provider from "oidc-provider";

const options = JSON.parse(process.argv[2]);
const server = http.createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: options.clientId,
      token_endpoint_auth_method: "none",
      application_type: "web",
      redirect_uris: [options.redirectUri],
      post_logout_redirect_uris: [options.redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    },
  ],
  cookies: { keys: ["test-cookie-key-0123456789abcdef"] },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id, name: id }) }),
  scopes: ["openid", "profile", "offline_access"],
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => options.audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: "",
        audience: options.audience,
        accessTokenFormat: "jwt",
        accessTokenTTL: options.accessTokenTtlSeconds,
      }),
    },
  },
  extraTokenClaims: () => (options.workspaceId === null ? {} : { [options.workspaceClaim]: options.workspaceId }),
  issueRefreshToken: () => true,
  pkce: { required: () => true },
});
server.on("request", provider.callback());
process.stdout.write(`${issuer}\n`);

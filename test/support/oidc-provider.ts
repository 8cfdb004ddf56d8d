/**
 * A real OpenID Connect provider for tests: `oidc-provider` in its own process
 * (oidc-provider-process.mjs) on a free loopback port, with one public client (the library:
 * authorization code + PKCE, refresh tokens, RP-initiated logout), JWT access tokens for the API's
 * audience carrying the workspace claim, and its development login and consent pages (any login
 * name, any password).
 */
import { spawn } from "node:child_process";
import path from "node:path";

export interface TestProvider {
  issuer: string;
  jwksUrl: string;
  close(): Promise<void>;
}

export interface TestProviderOptions {
  clientId: string;
  redirectUri: string;
  audience: string;
  workspaceClaim?: string;
  /** The workspace every account belongs to; null = the claim is left out. */
  workspaceId?: string | null;
  accessTokenTtlSeconds?: number;
}

export async function startTestProvider(options: TestProviderOptions): Promise<TestProvider> {
  const config = {
    workspaceClaim: "workspace_id",
    workspaceId: "oidc-ws",
    accessTokenTtlSeconds: 300,
    ...options,
  };
  const child = spawn(process.execPath, [path.join(__dirname, "oidc-provider-process.mjs"), JSON.stringify(config)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let errors = "";
  child.stderr!.on("data", (c: Buffer) => (errors = (errors + c.toString()).slice(-4000)));
  const issuer = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n")) resolve(line!.trim());
    });
    child.once("exit", (code) => reject(new Error(`oidc-provider exited (${code}): ${errors}`)));
  });
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

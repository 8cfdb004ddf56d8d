import fs from "node:fs";
import path from "node:path";
import { freePort } from "../../../test/support/net";
import { startTestProvider, type TestProvider } from "../../../test/support/oidc-provider";
import { root, startStack, step as runStep, type Stack } from "./support/library-stack";

/** The sign-in flow's screenshots (test-artifacts/ is not committed). */
const SHOTS = path.join(root, "test-artifacts", "oidc");
const AUDIENCE = "urn:media-platform:test";

let provider: TestProvider;
let stack: Stack;
const step = (name: string, body: () => Promise<void>) => runStep(stack, name, body);
const shot = async (name: string) => {
  fs.mkdirSync(SHOTS, { recursive: true });
  await stack.page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
};

beforeAll(async () => {
  const ports = { management: await freePort(), media: await freePort() };
  provider = await startTestProvider({
    clientId: "media-library",
    redirectUri: `http://127.0.0.1:${ports.management}/library`,
    audience: AUDIENCE,
    accessTokenTtlSeconds: 300,
  });
  stack = await startStack(
    "oidc",
    {
      AUTH_OIDC_ISSUER: provider.issuer,
      AUTH_OIDC_CLIENT_ID: "media-library",
      AUTH_OIDC_PROVIDER_NAME: "Test IdP",
      AUTH_OIDC_RESOURCE: AUDIENCE,
      AUTH_JWKS_URL: provider.jwksUrl,
      AUTH_ISSUER: provider.issuer,
      AUTH_AUDIENCE: AUDIENCE,
    },
    ports,
  );
}, 300_000);
afterAll(async () => {
  await stack?.stop();
  await provider?.close();
});

it("signs in at the provider (code + PKCE), shows the grid, keeps the session over a reload, and signs out there", async () => {
  const { page, management } = stack;
  await step("sign-in-page", async () => {
    await page.goto(`${management}/library#/`);
    await page.getByRole("button", { name: "Sign in with Test IdP" }).waitFor();
    // The development sign-in is the embedded mode's only.
    expect(await page.getByRole("button", { name: "Sign in as developer" }).count()).toBe(0);
    await shot("1-sign-in");
  });
  await step("provider-login", async () => {
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    const authorize = new URL(page.url());
    await page.locator('input[name="login"]').fill("ada");
    await page.locator('input[name="password"]').fill("any");
    await shot("2-provider-login");
    await page.locator('button[type="submit"]').click();
    await page.locator('button[type="submit"]').waitFor();
    await shot("3-provider-consent");
    await page.locator('button[type="submit"]').click();
    expect(authorize.pathname).not.toBe("");
  });
  await step("grid", async () => {
    await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
    // No code or state left in the address bar.
    expect(new URL(page.url()).search).toBe("");
    const token = await page.evaluate(() => sessionStorage.getItem("media-library-token"));
    const claims = JSON.parse(Buffer.from(token!.split(".")[1]!, "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    expect(claims).toMatchObject({ iss: provider.issuer, aud: AUDIENCE, sub: "ada", workspace_id: "oidc-ws" });
    await shot("4-grid");
  });
  await step("reload", async () => {
    await page.reload();
    await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
    await shot("5-after-reload");
  });
  await step("sign-out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    // RP-initiated logout: the provider asks, then sends the browser back to the library.
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    await shot("6-provider-logout");
    await page.locator('button[autofocus], button[type="submit"]').first().click();
    await page.waitForURL((url) => url.href.startsWith(management));
    await page.getByRole("button", { name: "Sign in with Test IdP" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("media-library-token"))).toBeNull();
    await shot("7-signed-out");
  });
}, 240_000);

it("says so when consent was denied at the provider", async () => {
  const { page, management } = stack;
  await step("denied", async () => {
    await page.goto(`${management}/library#/`);
    const authorize = page.waitForRequest((r) => r.url().startsWith(`${provider.issuer}/auth`));
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
    // What the provider sends back when the person declines.
    const state = new URL((await authorize).url()).searchParams.get("state")!;
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    const back = new URL(`${management}/library`);
    back.searchParams.set("error", "access_denied");
    back.searchParams.set("state", state);
    back.searchParams.set("iss", provider.issuer);
    await page.goto(back.href);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      "Sign-in was cancelled at Test IdP, or consent was not given",
    );
    await shot("8-consent-denied");
  });
}, 120_000);

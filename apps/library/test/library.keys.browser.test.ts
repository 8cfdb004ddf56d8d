import { axeViolations, shoot, signIn, startStack, step as runStep, type Stack } from "./support/library-stack";

let stack: Stack;
const step = (name: string, body: () => Promise<void>) => runStep(stack, name, body);

beforeAll(async () => {
  stack = await startStack("keys");
}, 300_000);
afterAll(async () => {
  await stack?.stop();
});

it("creates a read-only key on the keys page, shows its secret once, and revokes it", async () => {
  const { page, management } = stack;
  const call = (secret: string, path: string, init: RequestInit = {}) =>
    fetch(`${management}${path}`, { ...init, headers: { authorization: `Bearer ${secret}`, ...init.headers } });
  let secret = "";
  await step("sign-in", () => signIn(stack, "keys-ws"));
  await step("create", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.getByText("No keys yet.").waitFor();
    await page.getByLabel("Name").fill("CI read-only");
    await page.getByRole("button", { name: "Create key" }).click();
    secret = await page.getByLabel("The new key").inputValue();
    expect(secret).toMatch(/^mpk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    await page.getByRole("cell", { name: "CI read-only" }).waitFor();
    expect(await page.getByRole("cell", { name: "read", exact: true }).count()).toBe(1);
    await page.getByTestId("usage").waitFor();
    await shoot(stack, "keys");
    expect(await axeViolations(page)).toEqual([]);
  });
  await step("use", async () => {
    expect((await call(secret, "/v1/assets")).status).toBe(200);
    const refused = await call(secret, "/v1/asset-collections", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "x" }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { requiredScope: string }).requiredScope).toBe("write");
  });
  await step("revoke", async () => {
    // The stack accepts the confirmation dialog.
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.getByText("No keys yet.").waitFor();
    expect((await call(secret, "/v1/assets")).status).toBe(401);
  });
}, 180_000);

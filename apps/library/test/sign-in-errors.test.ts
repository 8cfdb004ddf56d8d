import { describeApiRefusal } from "../src/sign-in-errors";

// The API's own 401 details (services/management/src/auth/keys.ts) as a person reads them.
const names = { providerName: "Keycloak", workspaceClaim: "workspace_id" };

it("says a token for another API is the wrong audience", () => {
  expect(describeApiRefusal("wrong token audience", names)).toBe(
    "Keycloak's token is not meant for this API (wrong audience). The provider's client must issue access tokens for this API's audience.",
  );
});

it("says an account without a workspace lacks the claim", () => {
  expect(describeApiRefusal("token lacks the workspace_id claim", names)).toBe(
    "Your Keycloak account has no workspace: its token lacks the workspace_id claim. Ask an administrator to add it.",
  );
});

it("passes any other refusal on", () => {
  expect(describeApiRefusal("token expired", names)).toBe("Keycloak's token was refused: token expired");
});

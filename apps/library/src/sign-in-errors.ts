/** The settings these messages name (a subset of oidc.ts' OidcSettings). */
export interface ProviderNames {
  providerName: string;
  workspaceClaim: string;
}

/** The API's 401 for a provider's token, in words for the person signing in. */
export function describeApiRefusal(detail: string, settings: ProviderNames): string {
  if (/audience/i.test(detail))
    return `${settings.providerName}'s token is not meant for this API (wrong audience). The provider's client must issue access tokens for this API's audience.`;
  if (/lacks the .* claim/i.test(detail))
    return `Your ${settings.providerName} account has no workspace: its token lacks the ${settings.workspaceClaim} claim. Ask an administrator to add it.`;
  return `${settings.providerName}'s token was refused: ${detail}`;
}

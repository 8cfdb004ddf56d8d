/**
 * The public surface of `@media-platform/management/auth`: the credential checks the API runs on
 * every request (JWT verification, API keys, the scope of an operation), callable in-process. The
 * benches rely on these names only (to time a key check against a token check without HTTP).
 */
export { createVerifier, signToken, type Principal, type TokenVerifier } from "../auth/keys";
export { ApiKeyAuthenticator } from "../auth/api-keys";
export { scopeResolver } from "../auth/scopes";

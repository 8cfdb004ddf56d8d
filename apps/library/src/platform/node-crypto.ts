/** Browser stand-in for node:crypto: media URLs are signed by the management API, never here. */
export function createHmac(): never {
  throw new Error("media URLs are signed by the server (POST /v1/media-urls/sign)");
}

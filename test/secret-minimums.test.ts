// Both services hold every secret to one minimum (MIN_SECRET_BYTES, packages/storage), refused at
// start with a message naming the variable: a key one service accepts is never refused by the other.
import { MIN_SECRET_BYTES } from "@media-platform/storage";
import { loadConfig } from "../services/management/src/config";
import { loadMediaConfig } from "../services/media/src/config";

const load = { management: loadConfig, media: loadMediaConfig } as const;
const text = (bytes: number) => "k".repeat(bytes);
/** A Standard Webhooks secret holding `bytes` random bytes. */
const whsec = (bytes: number) => `whsec_${Buffer.alloc(bytes, 0xa7).toString("base64")}`;

const CASES: Array<[keyof typeof load, string, (bytes: number) => string]> = [
  ["management", "MEDIA_SIGNING_KEY", text],
  ["management", "MEDIA_PURGE_SECRET", text],
  ["management", "AUTH_JWT_SECRET", text],
  ["management", "WEBHOOK_SECRET", whsec],
  ["media", "MEDIA_SIGNING_KEY", text],
  ["media", "MEDIA_PURGE_SECRET", text],
];

describe("secret minimums", () => {
  it("are 32 bytes", () => {
    expect(MIN_SECRET_BYTES).toBe(32);
  });

  it.each(CASES)("%s refuses a %s below 32 bytes at start, naming it, and accepts 32", (service, name, secret) => {
    expect(() => load[service]({ [name]: secret(MIN_SECRET_BYTES - 1) })).toThrow(
      new RegExp(`${name}[^\\n]*at least ${MIN_SECRET_BYTES} bytes`),
    );
    expect(() => load[service]({ [name]: secret(MIN_SECRET_BYTES) })).not.toThrow();
  });
});

import { createHmac } from "node:crypto";
import { MediaUrlError, mediaUrl, originalUrl, step } from "../src";

const BASE = "https://media.example.test";
const ID = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";
const KEY = "a-signing-key-of-some-length";
const hmac = (s: string) => createHmac("sha256", KEY).update(s).digest("base64url");

describe("mediaUrl with an expiry", () => {
  it("signs path + exp when expiresAt is given", () => {
    const url = mediaUrl(BASE, ID, "jpg", [step("grayscale")], { signingKey: KEY, expiresAt: 1_800_000_000 });
    const signed = `/grayscale/${ID}.jpg?exp=1800000000`;
    expect(url).toBe(`${BASE}${signed}&sig=${hmac(signed)}`);
  });

  it("refuses an expiry without a signing key (it would not be enforced)", () => {
    expect(() => mediaUrl(BASE, ID, "jpg", [step("grayscale")], { expiresAt: 1_800_000_000 })).toThrow(/signingKey/);
  });
});

describe("originalUrl", () => {
  it("builds /original/<id>.<ext>, with an encoded download name, signed when a key is given", () => {
    expect(originalUrl(BASE, ID, "png")).toBe(`${BASE}/original/${ID}.png`);
    expect(originalUrl(BASE, ID, "jpg", { download: "my photo.jpg" })).toBe(
      `${BASE}/original/${ID}.jpg?download=my%20photo.jpg`,
    );
    const signed = `/original/${ID}.jpg?download=a.jpg&exp=1800000000`;
    expect(originalUrl(BASE, ID, "jpg", { download: "a.jpg", signingKey: KEY, expiresAt: 1_800_000_000 })).toBe(
      `${BASE}${signed}&sig=${hmac(signed)}`,
    );
  });

  it("throws MediaUrlError for a bad id, extension or download name", () => {
    expect(() => originalUrl(BASE, "nope", "jpg")).toThrow(MediaUrlError);
    expect(() => originalUrl(BASE, ID, "bmp" as "jpg")).toThrow(MediaUrlError);
    expect(() => originalUrl(BASE, ID, "jpg", { download: "../x.jpg" })).toThrow(/download/);
  });
});

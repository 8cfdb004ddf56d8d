import { createHmac } from "node:crypto";
import { MediaUrlError, mediaUrl, originalUrl, responsiveImages, sizes, step } from "../src";

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

  it("pins the asset version with v (signed before exp, or plain without a key)", () => {
    const url = mediaUrl(BASE, ID, "jpg", [step("grayscale")], { signingKey: KEY, version: 4, expiresAt: 1_800_000_000 });
    const signed = `/grayscale/${ID}.jpg?v=4&exp=1800000000`;
    expect(url).toBe(`${BASE}${signed}&sig=${hmac(signed)}`);
    expect(mediaUrl(BASE, ID, "jpg", [step("grayscale")], { version: 4 })).toBe(`${BASE}/grayscale/${ID}.jpg?v=4`);
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

describe("responsiveImages", () => {
  const images = responsiveImages({ baseUrl: BASE });

  it("srcset: one resize URL per width, ascending, deduplicated, after the given steps", () => {
    expect(images.srcset(ID, "jpg", [800, 400, 400])).toBe(
      `${BASE}/resize:width=400/${ID}.jpg 400w, ${BASE}/resize:width=800/${ID}.jpg 800w`,
    );
    expect(images.srcset(ID, "png", [320], [step("crop", { width: 500, height: 500 })])).toBe(
      `${BASE}/crop:width=500:height=500/resize:width=320/${ID}.png 320w`,
    );
  });

  it("srcset URLs are validated like any media URL and signed with the key", () => {
    expect(() => images.srcset(ID, "jpg", [0])).toThrow(MediaUrlError);
    expect(() => images.srcset(ID, "jpg", [])).toThrow(MediaUrlError);
    const signed = responsiveImages({ baseUrl: BASE, signingKey: KEY }).srcset(ID, "jpg", [200]);
    const path = `/resize:width=200/${ID}.jpg`;
    expect(signed).toBe(`${BASE}${path}?sig=${hmac(path)} 200w`);
  });

  it("sizes joins media conditions and the default slot", () => {
    expect(sizes([["(max-width: 640px)", "100vw"]], "50vw")).toBe("(max-width: 640px) 100vw, 50vw");
    expect(() => sizes([["(max-width: 640px)", "100vw, 2"]], "50vw")).toThrow(TypeError);
  });

  it("picture: AVIF and WebP sources through the format step, the img in the stored format", () => {
    const pic = images.picture(ID, "jpg", [400, 800], { sizes: "100vw" });
    expect(pic.sources).toEqual([
      {
        type: "image/avif",
        srcset: `${BASE}/resize:width=400/format:type=avif/${ID}.jpg 400w, ${BASE}/resize:width=800/format:type=avif/${ID}.jpg 800w`,
        sizes: "100vw",
      },
      {
        type: "image/webp",
        srcset: `${BASE}/resize:width=400/format:type=webp/${ID}.jpg 400w, ${BASE}/resize:width=800/format:type=webp/${ID}.jpg 800w`,
        sizes: "100vw",
      },
    ]);
    expect(pic.img).toEqual({
      src: `${BASE}/resize:width=800/${ID}.jpg`,
      srcset: `${BASE}/resize:width=400/${ID}.jpg 400w, ${BASE}/resize:width=800/${ID}.jpg 800w`,
      sizes: "100vw",
    });
  });

  it("preset: typed names from the preset file; unknown names throw; signed with the key", () => {
    const presets = { card: "resize:width=400", hero: ["resize:width=1600"] };
    const typed = responsiveImages({ baseUrl: BASE, presets, signingKey: KEY, expiresAt: 1_800_000_000 });
    const signed = `/preset:name=card/${ID}.jpg?exp=1800000000`;
    expect(typed.preset("card", ID, "jpg")).toBe(`${BASE}${signed}&sig=${hmac(signed)}`);
    // @ts-expect-error "thumb" is not a preset of the file
    expect(() => typed.preset("thumb", ID, "jpg")).toThrow(/unknown preset "thumb"; known: card, hero/);
    expect(() => images.preset("card", "not-a-uuid", "jpg")).toThrow(MediaUrlError);
    expect(images.preset("anything", ID, "webp")).toBe(`${BASE}/preset:name=anything/${ID}.webp`);
  });
});

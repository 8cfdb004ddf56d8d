import { createHmac } from "node:crypto";
import { MediaUrlError, defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { MediaUrlBuilder, mediaUrl, step } from "../src";

const BASE = "https://media.example.test";
const ID = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof MediaUrlError) return err.issues;
    throw err;
  }
  throw new Error("expected a MediaUrlError");
}

describe("mediaUrl", () => {
  it("formats one step in the spec's form, parameters in table order", () => {
    expect(mediaUrl(BASE, ID, "jpg", [step("thumbnail", { size: 256 })])).toBe(`${BASE}/thumbnail:size=256/${ID}.jpg`);
    // order of the object does not matter: the table's order is used
    expect(mediaUrl(BASE, ID, "png", step("crop", { gravity: "north", height: 100, width: 200 }))).toBe(
      `${BASE}/crop:width=200:height=100:gravity=north/${ID}.png`,
    );
  });

  it("takes crop's extension gravities (typed from the contracts) and refuses others, naming both lists", () => {
    for (const gravity of ["focal", "attention", "entropy"] as const) {
      expect(mediaUrl(BASE, ID, "jpg", step("crop", { width: 300, height: 100, gravity }))).toBe(
        `${BASE}/crop:width=300:height=100:gravity=${gravity}/${ID}.jpg`,
      );
    }
    expect(
      issuesOf(() => mediaUrl(BASE, ID, "jpg", step("crop", { width: 1, height: 1, gravity: "smart" as "focal" }))),
    ).toEqual([
      {
        path: "crop.gravity",
        message: expect.stringContaining(
          "one of center, north, south, east, west, or the extensions focal, attention, entropy",
        ),
      },
    ]);
  });

  it("writes a transformation without parameters as the bare name", () => {
    expect(mediaUrl(BASE, ID, "webp", [step("grayscale")])).toBe(`${BASE}/grayscale/${ID}.webp`);
    expect(mediaUrl(BASE, ID, "jpg", [step("avatar")])).toBe(`${BASE}/avatar/${ID}.jpg`); // size defaults to 128
  });

  it("chains steps left to right, each validated", () => {
    const url = mediaUrl(`${BASE}/`, ID, "jpg", [
      step("crop", { width: 800, height: 600, x: 0, y: 10 }),
      step("grayscale", { lightness: -12.5 }),
      step("thumbnail", { size: 128, quality: 90 }),
    ]);
    expect(url).toBe(
      `${BASE}/crop:width=800:height=600:x=0:y=10/grayscale:lightness=-12.5/thumbnail:size=128:quality=90/${ID}.jpg`,
    );
    const parsed = parseMediaPath(url.slice(BASE.length));
    expect(parsed.steps.map((s) => s.name)).toEqual(["crop", "grayscale", "thumbnail"]);
    expect(parsed.steps[1]!.params).toEqual({ lightness: -12.5 });

    const built = new MediaUrlBuilder(BASE, ID, "png")
      .add("saturation", { value: 0.5 })
      .add("sharpen", { value: 1.5 })
      .toString();
    expect(built).toBe(`${BASE}/saturation:value=0.5/sharpen:value=1.5/${ID}.png`);
  });

  it("writes every colour spelling in the canonical one (6 lower-case hex digits, 8 when not opaque)", () => {
    const cases: [string, string][] = [
      ["ff8800", "background=ff8800"],
      ["F80", "background=ff8800"],
      ["rgb(255,0,0)", "background=ff0000"],
      ["rgb(10, 20, 30)", "background=0a141e"],
      ["rebeccapurple", "background=663399"],
      ["transparent", "background=00000000"],
    ];
    for (const [colour, expected] of cases) {
      const url = mediaUrl(BASE, ID, "png", [step("fit", { width: 300, height: 200, background: colour })]);
      expect(url).toBe(`${BASE}/fit:width=300:height=200:${expected}/${ID}.png`);
      expect(new URL(url).pathname).toBe(url.slice(BASE.length)); // already a valid URL path
      const parsed = parseMediaPath(new URL(url).pathname);
      expect(parsed.steps[0]!.params).toMatchObject({ background: expected.slice("background=".length) });
    }
    expect(mediaUrl(BASE, ID, "png", [step("avatar", { size: 200, border: 4, border_color: "0F0" })])).toBe(
      `${BASE}/avatar:size=200:border=4:border_color=00ff00/${ID}.png`,
    );
  });

  it("throws MediaUrlError naming the parameter and its allowed range for an out-of-range value", () => {
    const issues = issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("thumbnail", { size: 10 })]));
    expect(issues).toEqual([
      { path: "thumbnail.size", message: expect.stringContaining("an integer from 50 to 8192") },
    ]);
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("clahe", { clipLimit: 41 })]))[0]!.path).toBe(
      "clahe.clipLimit",
    );
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("brightness", { value: 0 })]))[0]!.message).toMatch(
      /greater than 0/,
    );
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("threshold", { value: 12.5 })]))[0]!.message).toMatch(
      /whole number/,
    );
  });

  it("throws for missing required parameters, bad enum values, bad colours and cross-parameter rules", () => {
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("crop", { width: 10 })]))).toEqual([
      { path: "crop.height", message: "required parameter is missing" },
    ]);
    expect(
      issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("crop", { width: 10, height: 10, gravity: "up" as "north" })]))[0]!
        .path,
    ).toBe("crop.gravity");
    expect(
      issuesOf(() => mediaUrl(BASE, ID, "png", [step("fit", { width: 10, height: 10, background: "#ff0000" })]))[0]!
        .path,
    ).toBe("fit.background");
    expect(issuesOf(() => mediaUrl(BASE, ID, "png", [step("avatar", { border_color: "red" })]))[0]!.path).toBe(
      "avatar.border_color",
    );
    expect(issuesOf(() => mediaUrl(BASE, ID, "png", [step("avatar", { size: 64, border: 32 })]))[0]!.message).toMatch(
      /border must be less than half/,
    );
  });

  it("throws for unknown transformations and parameters given through untyped input", () => {
    const untyped = (name: string, params: Record<string, unknown>) =>
      ({ name, params }) as unknown as ReturnType<typeof step>;
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [untyped("blur", {})]))[0]!.message).toMatch(
      /unknown transformation "blur"/,
    );
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [untyped("grayscale", { amount: 3 })]))).toEqual([
      { path: "grayscale.amount", message: "unknown parameter; grayscale accepts lightness" },
    ]);
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [untyped("grayscale", { lightness: NaN })]))[0]!.path).toBe(
      "grayscale.lightness",
    );
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", [untyped("grayscale", { lightness: [1] })]))[0]!.message).toBe(
      "must be a number or a string",
    );
  });

  it("validates the asset id, the extension and the number of steps", () => {
    expect(issuesOf(() => mediaUrl(BASE, "not-a-uuid", "jpg", [step("grayscale")]))[0]!.path).toBe("assetId");
    expect(issuesOf(() => mediaUrl(BASE, ID, "bmp" as "jpg", [step("grayscale")]))[0]!.path).toBe("extension");
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", []))[0]!.path).toBe("path");
    const nine = Array.from({ length: 9 }, () => step("grayscale"));
    expect(issuesOf(() => mediaUrl(BASE, ID, "jpg", nine))[0]!.message).toMatch(/at most 8/);
    // an upper-case id is normalised like the service does
    expect(mediaUrl(BASE, ID.toUpperCase(), "jpg", [step("grayscale")])).toBe(`${BASE}/grayscale/${ID}.jpg`);
  });

  it("applies the media service's safety caps when given", () => {
    const limits = { ...defaultMediaLimits, maxDimension: 1000 };
    expect(mediaUrl(BASE, ID, "jpg", [step("thumbnail", { size: 2000 })])).toContain("size=2000");
    expect(
      issuesOf(() => mediaUrl(BASE, ID, "jpg", [step("thumbnail", { size: 2000 })], { limits }))[0]!.message,
    ).toMatch(/50 to 1000 \(safety cap maxDimension\)/);
  });

  it("signs the path with MEDIA_SIGNING_KEY (HMAC-SHA256, base64url) when a key is given", () => {
    const key = "a-signing-key-of-some-length";
    const url = mediaUrl(BASE, ID, "jpg", [step("thumbnail", { size: 64 })], { signingKey: key });
    const path = `/thumbnail:size=64/${ID}.jpg`;
    const sig = createHmac("sha256", key).update(path).digest("base64url");
    expect(url).toBe(`${BASE}${path}?sig=${sig}`);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("keeps a base path prefix (e.g. a CDN mount)", () => {
    expect(mediaUrl("https://cdn.example.test/media/", ID, "gif", [step("solarize")])).toBe(
      `https://cdn.example.test/media/solarize/${ID}.gif`,
    );
  });
});

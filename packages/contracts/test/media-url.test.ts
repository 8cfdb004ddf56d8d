import fc from "fast-check";
import {
  canonicalMediaPath,
  defaultMediaLimits,
  formatMediaPath,
  MAX_STEPS,
  mediaAssetIdOf,
  MEDIA_EXTENSIONS,
  MediaUrlError,
  paramSpecsOf,
  parseMediaPath,
  resolveParams,
  transformationNames,
  transformationSpecs,
  upperBound,
  type MediaRequest,
  type ParamSpec,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";

const ID = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";

/** parseMediaPath either returns or throws a MediaUrlError, nothing else. */
function parseOrValidationError(path: string): void {
  try {
    parseMediaPath(path);
  } catch (err) {
    if (!(err instanceof MediaUrlError)) throw err;
    expect(err.issues.length).toBeGreaterThan(0);
    for (const issue of err.issues) {
      expect(typeof issue.path).toBe("string");
      expect(typeof issue.message).toBe("string");
    }
  }
}

describe("parseMediaPath on random input (fast-check)", () => {
  it("never throws anything but MediaUrlError on arbitrary strings", () => {
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 300 }), parseOrValidationError), { numRuns: 2000 });
  });

  it("never throws anything but MediaUrlError on URL-shaped strings", () => {
    const token = fc.oneof(
      fc.constantFrom(
        ...transformationNames,
        "/",
        ":",
        "=",
        ".",
        "%",
        "%2",
        "%zz",
        "%3A",
        "?",
        "png",
        "jpg",
        ID,
        "-",
        "+",
        "e5",
        "0x1",
      ),
      fc.constantFrom(
        "size",
        "width",
        "height",
        "value",
        "x",
        "y",
        "gravity",
        "background",
        "border",
        "border_color",
        "quality",
      ),
      fc.integer({ min: -1e6, max: 1e6 }).map(String),
      fc.double({ noNaN: false }).map(String),
      fc.string({ maxLength: 8 }),
    );
    const path = fc.array(token, { maxLength: 40 }).map((parts) => `/${parts.join("")}`);
    fc.assert(fc.property(path, parseOrValidationError), { numRuns: 3000 });
  });
});

/** Values a URL may carry for one parameter, within the spec's range and the default caps. */
function valueArbitrary(spec: ParamSpec): fc.Arbitrary<number | string> {
  switch (spec.type) {
    case "integer": {
      const hi = upperBound(spec, defaultMediaLimits) ?? 1_000_000;
      return fc.integer({ min: spec.exclusiveMin ? spec.min + 1 : spec.min, max: hi });
    }
    case "number": {
      // Hundredths: what people write in URLs, and exactly representable by String(n).
      const hi = Math.round((upperBound(spec, defaultMediaLimits) ?? 10_000) * 100);
      const lo = Math.round(spec.min * 100) + (spec.exclusiveMin ? 1 : 0);
      return fc.integer({ min: lo, max: hi }).map((n) => (n === 0 ? 0 : n / 100));
    }
    case "enum":
      return fc.constantFrom(...spec.values);
    case "color": {
      // A parsed colour is in canonicalColor's spelling: 6 lower-case hex digits, 8 when not opaque.
      const byte = (max: number) => fc.integer({ min: 0, max }).map((n) => n.toString(16).padStart(2, "0"));
      const opaque = fc.tuple(byte(255), byte(255), byte(255)).map((bytes) => bytes.join(""));
      return fc.oneof(
        opaque,
        fc.tuple(opaque, byte(254)).map(([rgb, alpha]) => rgb + alpha),
      );
    }
    case "text":
      return fc.constant(spec.example);
  }
}

function stepArbitrary(name: TransformationName): fc.Arbitrary<TransformationStep> {
  const record: Record<string, fc.Arbitrary<number | string>> = {};
  const requiredKeys: string[] = [];
  for (const [key, spec] of Object.entries(paramSpecsOf(name))) {
    record[key] = valueArbitrary(spec);
    if (spec.required && spec.default === undefined) requiredKeys.push(key);
  }
  const check = (
    transformationSpecs[name] as {
      check?: (p: Record<string, unknown>, l: typeof defaultMediaLimits) => string | undefined;
    }
  ).check;
  // The table's cross-parameter check runs on resolved values, as the parser runs it.
  return fc
    .record(record, { requiredKeys })
    .filter((params) => !check?.(resolveParams(name, params as never), defaultMediaLimits))
    .map((params) => ({ name, params }) as TransformationStep);
}

const requestArbitrary: fc.Arbitrary<MediaRequest> = fc.record({
  steps: fc.array(fc.constantFrom(...transformationNames).chain(stepArbitrary), { minLength: 1, maxLength: MAX_STEPS }),
  assetId: fc.uuid().map((u) => u.toLowerCase()),
  extension: fc.constantFrom(...MEDIA_EXTENSIONS),
});

describe("formatMediaPath / parseMediaPath round trip (fast-check)", () => {
  it("parseMediaPath(formatMediaPath(r)) deep-equals r for every valid request", () => {
    fc.assert(
      fc.property(requestArbitrary, (request) => {
        expect(parseMediaPath(formatMediaPath(request))).toEqual(request);
      }),
      { numRuns: 1500 },
    );
  });

  it("formatMediaPath(parseMediaPath(s)) is a fixed point for the formatted form", () => {
    fc.assert(
      fc.property(requestArbitrary, (request) => {
        const path = formatMediaPath(request);
        expect(formatMediaPath(parseMediaPath(path))).toBe(path);
      }),
      { numRuns: 500 },
    );
  });
});

describe("mediaAssetIdOf (the cache lookups' asset id, no step parsing)", () => {
  it("names the asset of every valid request, with any query string", () => {
    fc.assert(
      fc.property(requestArbitrary, fc.constantFrom("", "?v=2", "?exp=1&sig=abc"), (request, query) => {
        expect(mediaAssetIdOf(`${formatMediaPath(request)}${query}`)).toBe(request.assetId);
      }),
      { numRuns: 300 },
    );
  });

  it("is undefined when the last segment is not <uuid>.<ext>", () => {
    const id = "0b0e8f5e-3c3f-4b8e-9d4a-7a1f2c3d4e5f";
    expect(mediaAssetIdOf(`/thumbnail:size=256/${id.toUpperCase()}.jpg`)).toBe(id);
    for (const target of ["/healthz", "/metrics", `/thumbnail/${id}x.jpg`, `/${id}/x.jpg`, "/", "", `/t/${id}.jpg/`]) {
      expect([target, mediaAssetIdOf(target)]).toEqual([target, undefined]);
    }
  });
});

/**
 * The spec's ranges (§4.2), written out here independently of the contracts table: inclusive
 * bounds accepted, bound ± epsilon rejected, decimals rejected where the spec says integer.
 * `hi` undefined = "N+": the default safety cap applies (named by `cap`).
 */
interface RangeRow {
  t: TransformationName;
  p: string;
  integer: boolean;
  lo: number;
  exclusiveLo?: boolean;
  hi?: number;
  cap?: keyof typeof defaultMediaLimits;
}

const RANGES: RangeRow[] = [
  { t: "crop", p: "width", integer: true, lo: 1, cap: "maxDimension" },
  { t: "crop", p: "height", integer: true, lo: 1, cap: "maxDimension" },
  { t: "crop", p: "x", integer: true, lo: 0, cap: "maxDimension" },
  { t: "crop", p: "y", integer: true, lo: 0, cap: "maxDimension" },
  { t: "color-balance", p: "cyan", integer: false, lo: -100, hi: 100 },
  { t: "color-balance", p: "magenta", integer: false, lo: -100, hi: 100 },
  { t: "color-balance", p: "yellow", integer: false, lo: -100, hi: 100 },
  { t: "clahe", p: "clipLimit", integer: false, lo: 1, hi: 40 },
  { t: "clahe", p: "tileSize", integer: true, lo: 2, hi: 256 },
  { t: "grayscale", p: "lightness", integer: false, lo: -100, hi: 100 },
  { t: "fit", p: "width", integer: true, lo: 1, cap: "maxDimension" },
  { t: "fit", p: "height", integer: true, lo: 1, cap: "maxDimension" },
  { t: "saturation", p: "value", integer: false, lo: 0, cap: "maxMultiplier" },
  { t: "add-noise", p: "amount", integer: false, lo: 0.1, cap: "maxNoiseAmount" },
  { t: "brightness", p: "value", integer: false, lo: 0, exclusiveLo: true, cap: "maxMultiplier" },
  { t: "wave", p: "amplitude", integer: false, lo: 1, cap: "maxWaveAmplitude" },
  { t: "wave", p: "wavelength", integer: false, lo: 5, cap: "maxWaveLength" },
  { t: "channelManipulation", p: "red", integer: false, lo: 0, cap: "maxMultiplier" },
  { t: "channelManipulation", p: "green", integer: false, lo: 0, cap: "maxMultiplier" },
  { t: "channelManipulation", p: "blue", integer: false, lo: 0, cap: "maxMultiplier" },
  { t: "sharpen", p: "value", integer: false, lo: 0, cap: "maxSharpen" },
  { t: "avatar", p: "size", integer: true, lo: 32, cap: "maxDimension" },
  { t: "thumbnail", p: "size", integer: true, lo: 50, cap: "maxDimension" },
  { t: "thumbnail", p: "quality", integer: true, lo: 1, hi: 100 },
  { t: "exposure", p: "value", integer: false, lo: -5, hi: 5 },
  { t: "solarize", p: "threshold", integer: true, lo: 0, hi: 255 },
  { t: "threshold", p: "value", integer: true, lo: 0, hi: 255 },
];

/** Valid values for the other required parameters, so only the one under test can fail. */
const BASE: Partial<Record<TransformationName, Record<string, string>>> = {
  crop: { width: "10", height: "10" },
  fit: { width: "10", height: "10" },
  saturation: { value: "1" },
  "add-noise": { amount: "1" },
  brightness: { value: "1" },
  wave: { amplitude: "5", wavelength: "50" },
  sharpen: { value: "1" },
  thumbnail: { size: "100" },
  exposure: { value: "0" },
  threshold: { value: "128" },
};

function url(t: TransformationName, p: string, value: string): string {
  const params = { ...BASE[t], [p]: value };
  return `/${[t, ...Object.entries(params).map(([k, v]) => `${k}=${v}`)].join(":")}/${ID}.png`;
}

function expectAccepted(t: TransformationName, p: string, value: string): void {
  const step = parseMediaPath(url(t, p, value)).steps[0]!;
  expect((step.params as Record<string, unknown>)[p]).toBe(Number(value));
}

function expectRejected(t: TransformationName, p: string, value: string, message: RegExp): void {
  let error: unknown;
  try {
    parseMediaPath(url(t, p, value));
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(MediaUrlError);
  const issue = (error as MediaUrlError).issues.find((i) => i.path === `${t}.${p}`);
  expect(issue?.message).toMatch(message);
  expect(issue?.message).toMatch(/allowed: /);
}

const fmt = (n: number) => String(Math.round(n * 1e6) / 1e6);

describe.each(RANGES)("$t $p (spec range)", (row) => {
  const hi = row.hi ?? defaultMediaLimits[row.cap!];
  const eps = row.integer ? 1 : 0.001;

  it("accepts the inclusive bounds", () => {
    if (row.exclusiveLo) expectAccepted(row.t, row.p, fmt(row.lo + eps));
    else expectAccepted(row.t, row.p, fmt(row.lo));
    expectAccepted(row.t, row.p, fmt(hi));
  });

  it("rejects bound ± epsilon, naming the allowed range", () => {
    expectRejected(row.t, row.p, row.exclusiveLo ? fmt(row.lo) : fmt(row.lo - eps), /below the allowed range/);
    expectRejected(row.t, row.p, fmt(hi + eps), /above the allowed range/);
    if (row.cap) {
      let error: MediaUrlError | undefined;
      try {
        parseMediaPath(url(row.t, row.p, fmt(hi + eps)));
      } catch (err) {
        error = err as MediaUrlError;
      }
      expect(error?.message).toContain(`safety cap ${row.cap}`);
    }
  });

  if (row.integer) {
    it("rejects decimals (the spec says integer)", () => {
      expectRejected(row.t, row.p, `${row.lo + 1}.5`, /whole number/);
    });
  } else {
    it("accepts decimals", () => {
      expectAccepted(row.t, row.p, fmt(Math.min(hi, row.lo + 0.25)));
    });
  }

  it("rejects a non-number", () => {
    expectRejected(row.t, row.p, "abc", /not a number/);
  });
});

describe("spec rules beyond ranges", () => {
  it("bare names work for transformations whose parameters are optional, and for avatar (size 128)", () => {
    for (const name of ["color-balance", "clahe", "grayscale", "channelManipulation", "avatar", "solarize"] as const) {
      expect(parseMediaPath(`/${name}/${ID}.jpg`).steps).toEqual([{ name, params: {} }]);
    }
  });

  it("names the missing required parameter", () => {
    for (const [t, p] of [
      ["crop", "width"],
      ["fit", "height"],
      ["add-noise", "amount"],
      ["brightness", "value"],
      ["wave", "wavelength"],
      ["sharpen", "value"],
      ["thumbnail", "size"],
      ["threshold", "value"],
    ] as const) {
      const params = Object.entries(BASE[t] ?? {}).filter(([k]) => k !== p);
      const path = `/${[t, ...params.map(([k, v]) => `${k}=${v}`)].join(":")}/${ID}.png`;
      expect(() => parseMediaPath(path)).toThrow(new RegExp(`${t}\\.${p}: required parameter is missing`));
    }
  });

  it("enumerations take exactly the spec's values", () => {
    for (const g of ["center", "north", "south", "east", "west"]) {
      expect(parseMediaPath(`/crop:width=1:height=1:gravity=${g}/${ID}.png`).steps[0]!.params).toMatchObject({
        gravity: g,
      });
    }
    expect(() => parseMediaPath(`/crop:width=1:height=1:gravity=top/${ID}.png`)).toThrow(MediaUrlError);
    for (const type of ["gaussian", "uniform", "salt-pepper"]) {
      expect(() => parseMediaPath(`/add-noise:amount=1:type=${type}/${ID}.png`)).not.toThrow();
    }
    for (const target of ["shadows", "midtones", "highlights"]) {
      expect(() => parseMediaPath(`/color-balance:target=${target}/${ID}.png`)).not.toThrow();
    }
    for (const shape of ["square", "circle"]) {
      expect(() => parseMediaPath(`/avatar:shape=${shape}/${ID}.png`)).not.toThrow();
    }
    expect(() => parseMediaPath(`/avatar:shape=oval/${ID}.png`)).toThrow(MediaUrlError);
  });

  it("colours: fit.background takes hex without #, rgb() and CSS names; avatar.border_color hex only", () => {
    for (const c of ["fff", "ff0000", "rgb(1,2,3)", "red"]) {
      expect(() => parseMediaPath(`/fit:width=1:height=1:background=${c}/${ID}.png`)).not.toThrow();
    }
    for (const c of ["%23fff", "rgb(300,0,0)", "notacolour", "ggg"]) {
      expect(() => parseMediaPath(`/fit:width=1:height=1:background=${c}/${ID}.png`)).toThrow(MediaUrlError);
    }
    expect(() => parseMediaPath(`/avatar:border=2:border_color=00ff00/${ID}.png`)).not.toThrow();
    expect(() => parseMediaPath(`/fit:width=1:height=1:background=rgb(0001,0,0)/${ID}.png`)).toThrow(/fit\.background/);
    expect(() => parseMediaPath(`/avatar:border=2:border_color=red/${ID}.png`)).toThrow(/avatar\.border_color/);
  });

  it("colours: every spelling parses to canonicalColor's one spelling (6 or 8 lower-case hex digits)", () => {
    const background = (c: string) =>
      (parseMediaPath(`/fit:width=1:height=1:background=${c}/${ID}.png`).steps[0]!.params as { background: string })
        .background;
    for (const c of [
      "fff",
      "FFF",
      "ffffff",
      "FFFFFF",
      "ffff",
      "ffffffff",
      "rgb(255,255,255)",
      "rgb(255,%20255,%20255)",
      "white",
      "WHITE",
    ]) {
      expect(background(c)).toBe("ffffff");
    }
    expect(background("F008")).toBe("ff000088");
    expect(background("ff000088")).toBe("ff000088");
    expect(background("rgba(255,0,0,0)")).toBe("ff000000");
    expect(background("transparent")).toBe("00000000");
    expect(background("rebeccapurple")).toBe("663399");
    expect(canonicalMediaPath(parseMediaPath(`/fit:width=1:height=1:background=Red/${ID.toUpperCase()}.PNG`))).toBe(
      `/fit:width=1:height=1:background=ff0000/${ID}.png`,
    );
    expect(
      (parseMediaPath(`/avatar:border=2:border_color=0F0/${ID}.png`).steps[0]!.params as { border_color: string })
        .border_color,
    ).toBe("00ff00");
  });

  it("at most 8 steps", () => {
    expect(parseMediaPath(`${"/grayscale".repeat(8)}/${ID}.png`).steps).toHaveLength(8);
    expect(() => parseMediaPath(`${"/grayscale".repeat(9)}/${ID}.png`)).toThrow(/at most 8/);
  });
});

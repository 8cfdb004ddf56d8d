import express from "express";
import request from "supertest";
import {
  defaultMediaLimits,
  describeRange,
  paramSpecsOf,
  parseMediaPath,
  transformationNames,
  type MediaLimits,
} from "@media-platform/contracts";
import { catalogRouter, transformationCatalog, type TransformationCatalog } from "../src/catalog";

const ASSET = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";

function appWith(limits: MediaLimits) {
  const app = express();
  app.use(catalogRouter(limits));
  return app;
}

const param = (catalog: TransformationCatalog, t: string, p: string) => {
  const found = catalog.transformations.find((x) => x.name === t)?.params.find((x) => x.name === p);
  if (!found) throw new Error(`${t}.${p} missing`);
  return found;
};

describe("GET /transformations", () => {
  it("returns all 16 transformations of the spec (then the extensions) with every parameter, as JSON", async () => {
    const res = await request(appWith(defaultMediaLimits)).get("/transformations");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers["cache-control"]).toBe("public, max-age=300");
    const body = res.body as TransformationCatalog;
    expect(body.count).toBe(24);
    expect(body.transformations.map((t) => t.name)).toEqual([
      "crop",
      "color-balance",
      "clahe",
      "grayscale",
      "fit",
      "saturation",
      "add-noise",
      "brightness",
      "wave",
      "channelManipulation",
      "sharpen",
      "avatar",
      "thumbnail",
      "exposure",
      "solarize",
      "threshold",
      // extensions (issue 11)
      "resize",
      "format",
      "frame",
      "page",
      "max-bytes",
      "overlay",
      "text",
      "redact",
    ]);
    // Listed apart: the spec's 16 first, flagged extension=false, ours after them, each saying so.
    expect(body.transformations.map((t) => t.extension)).toEqual([...Array(16).fill(false), ...Array(8).fill(true)]);
    // What each stored format renders as.
    const rendersAs = Object.fromEntries(body.formats.map((f) => [f.format, [f.mimeType, f.renditionFormat]]));
    expect(rendersAs).toMatchObject({
      jpeg: ["image/jpeg", "jpeg"],
      svg: ["image/svg+xml", "png"],
      heic: ["image/heic", "jpeg"],
      cr3: ["image/x-canon-cr3", "jpeg"],
      raf: ["image/x-fuji-raf", "jpeg"],
      pdf: ["application/pdf", "png"],
    });
    for (const t of body.transformations.slice(16)) expect(t.description).toMatch(/^Extension \(not in the spec\)/);
    for (const t of body.transformations.slice(0, 16)) expect(t.description).not.toMatch(/Extension/);
    expect(param(body, "text", "text")).toMatchObject({
      type: "text",
      required: true,
      range: "percent-encoded UTF-8 text of 1 to 200 characters",
      values: null,
    });
    expect(body.transformations.find((t) => t.name === "redact")!.example).toBe(
      "/redact:region=0.25,0.25,0.5,0.5/{assetId}.{ext}",
    );
    for (const t of body.transformations) {
      expect([t.name, t.params.map((p) => p.name)]).toEqual([t.name, Object.keys(paramSpecsOf(t.name))]);
      expect(t.description.length).toBeGreaterThan(10);
    }
    expect(body.maxSteps).toBe(8);
    expect(body.extensions).toEqual(expect.arrayContaining(["jpg", "png", "webp"]));
    expect(body.limits).toEqual({ ...defaultMediaLimits });
  });

  it("states types, ranges (as numbers and in words), defaults and enum values from the spec's tables", async () => {
    const body = (await request(appWith(defaultMediaLimits)).get("/transformations")).body as TransformationCatalog;
    expect(param(body, "clahe", "clipLimit")).toEqual({
      name: "clipLimit",
      type: "number",
      description: expect.any(String),
      required: false,
      omittable: true,
      default: 3,
      range: "a number from 1 to 40",
      min: 1,
      exclusiveMin: false,
      max: 40,
      cap: null,
      values: null,
      hexOnly: null,
    });
    expect(param(body, "clahe", "tileSize")).toMatchObject({ type: "integer", min: 2, max: 256, default: 16 });
    expect(param(body, "thumbnail", "quality")).toMatchObject({
      type: "integer",
      min: 1,
      max: 100,
      default: 75,
      required: false,
    });
    expect(param(body, "exposure", "value")).toMatchObject({ type: "number", min: -5, max: 5, default: 0 });
    expect(param(body, "threshold", "value")).toMatchObject({
      type: "integer",
      min: 0,
      max: 255,
      required: true,
      omittable: false,
      default: null,
    });
    expect(param(body, "crop", "gravity")).toMatchObject({
      type: "enum",
      values: ["center", "north", "south", "east", "west"],
      default: "center",
      range: "one of center, north, south, east, west",
      min: null,
      max: null,
    });
    expect(param(body, "add-noise", "type").values).toEqual(["gaussian", "uniform", "salt-pepper"]);
    expect(param(body, "fit", "background")).toMatchObject({ type: "color", default: "ffffff", hexOnly: false });
    expect(param(body, "avatar", "border_color")).toMatchObject({ type: "color", hexOnly: true, default: null });
    // brightness must be strictly positive
    expect(param(body, "brightness", "value")).toMatchObject({ min: 0, exclusiveMin: true, required: true });
    // avatar size: required in the spec, yet has a default of 128, so a URL may omit it
    expect(param(body, "avatar", "size")).toMatchObject({ required: true, omittable: true, default: 128, min: 32 });
    // every range text is the contracts' describeRange (the same words as the 400 details)
    for (const t of body.transformations) {
      for (const p of t.params) {
        expect(p.range).toBe(describeRange(paramSpecsOf(t.name)[p.name]!, defaultMediaLimits));
      }
    }
  });

  it("reports the safety caps in force for open-ended (N+) ranges, following the configured limits", async () => {
    const limits: MediaLimits = {
      ...defaultMediaLimits,
      maxDimension: 4000,
      maxMultiplier: 3.5,
      maxWaveAmplitude: 200,
    };
    const body = (await request(appWith(limits)).get("/transformations")).body as TransformationCatalog;
    expect(param(body, "thumbnail", "size")).toMatchObject({
      min: 50,
      max: 4000,
      cap: { name: "maxDimension", value: 4000 },
      range: "an integer from 50 to 4000 (safety cap maxDimension)",
    });
    expect(param(body, "saturation", "value")).toMatchObject({
      max: 3.5,
      cap: { name: "maxMultiplier", value: 3.5 },
      default: 1,
    });
    expect(param(body, "wave", "amplitude")).toMatchObject({
      min: 1,
      max: 200,
      cap: { name: "maxWaveAmplitude", value: 200 },
    });
    // fixed spec bounds carry no cap
    expect(param(body, "color-balance", "cyan")).toMatchObject({ min: -100, max: 100, cap: null });
    expect(body.limits.maxDimension).toBe(4000);

    const defaults = (await request(appWith(defaultMediaLimits)).get("/transformations")).body as TransformationCatalog;
    expect(param(defaults, "thumbnail", "size").max).toBe(defaultMediaLimits.maxDimension);
  });

  it("gives each transformation an example URL that the media URL parser accepts", () => {
    const catalog = transformationCatalog(defaultMediaLimits);
    for (const t of catalog.transformations) {
      const path = t.example.replace("{assetId}", ASSET).replace("{ext}", "jpg");
      const parsed = parseMediaPath(path, defaultMediaLimits);
      expect(parsed.steps).toHaveLength(1);
      expect(parsed.steps[0]!.name).toBe(t.name);
    }
    expect(catalog.transformations.find((t) => t.name === "thumbnail")!.example).toBe(
      "/thumbnail:size=256/{assetId}.{ext}",
    );
    expect(catalog.transformations.find((t) => t.name === "grayscale")!.example).toBe("/grayscale/{assetId}.{ext}");
    expect(catalog.transformations.map((t) => t.name)).toEqual(transformationNames);
  });

  it("answers only GET /transformations (other paths fall through)", async () => {
    const app = appWith(defaultMediaLimits);
    app.use((_req, res) => {
      res.status(404).send("next");
    });
    expect((await request(app).get("/transformations/crop")).text).toBe("next");
    expect((await request(app).post("/transformations")).status).toBe(404);
    const head = await request(app).head("/transformations");
    expect(head.status).toBe(200);
  });
});

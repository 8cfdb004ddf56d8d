import { z } from "zod";
import { assetAttributesSchema } from "../src/asset-attributes";
import * as m from "../src/management";

describe("management contracts", () => {
  it("every exported schema carries a description (used for OpenAPI)", () => {
    const schemas = Object.entries(m).filter(([, v]) => v instanceof z.ZodType) as Array<[string, z.ZodType]>;
    expect(schemas.length).toBeGreaterThan(15);
    for (const [name, schema] of schemas) expect([name, schema.description]).toEqual([name, expect.any(String)]);
  });

  it("PATCH: trims, empties to null, dedupes tags, refuses unknown fields and bad tags", () => {
    expect(
      m.patchAssetSchema.parse({ userTitle: "  t ", userCaption: "", userTags: [" a", "a ", "b"], collectionId: null }),
    ).toEqual({
      userTitle: "t",
      userCaption: null,
      userTags: ["a", "b"],
      collectionId: null,
    });
    expect(m.patchAssetSchema.parse({})).toEqual({});
    expect(m.patchAssetSchema.safeParse({ width: 1 }).success).toBe(false);
    expect(m.patchAssetSchema.safeParse({ userTags: [""] }).success).toBe(false);
    expect(m.patchAssetSchema.safeParse({ userTags: ["x".repeat(65)] }).success).toBe(false);
    expect(m.patchAssetSchema.safeParse({ userTags: Array.from({ length: 51 }, (_, i) => `${i}`) }).success).toBe(
      false,
    );
    // 51 entries that dedupe to 50 are fine
    expect(
      m.patchAssetSchema.safeParse({ userTags: [...Array.from({ length: 50 }, (_, i) => `${i}`), "0"] }).success,
    ).toBe(true);
    expect(m.patchAssetSchema.safeParse({ collectionId: "nope" }).success).toBe(false);
    expect(m.patchAssetSchema.parse({ collectionId: "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA" }).collectionId).toBe(
      "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
    );
  });

  it("PATCH focalPoint: fractions 0-1 on both axes (strict), or null; the attributes blob ignores unknown keys", () => {
    expect(m.patchAssetSchema.parse({ focalPoint: { x: 0, y: 1 } })).toEqual({ focalPoint: { x: 0, y: 1 } });
    expect(m.patchAssetSchema.parse({ focalPoint: null })).toEqual({ focalPoint: null });
    for (const bad of [
      { x: 1.01, y: 0 },
      { x: 0, y: -0.5 },
      { x: 0.5 },
      { x: "0.5", y: 0.5 },
      { x: 0.5, y: 0.5, z: 0 },
      [0.5, 0.5],
      0.5,
    ]) {
      expect([bad, m.patchAssetSchema.safeParse({ focalPoint: bad }).success]).toEqual([bad, false]);
    }
    expect(assetAttributesSchema.parse({ focalPoint: { x: 0.2, y: 0.8 }, crop: "later" })).toEqual({
      focalPoint: { x: 0.2, y: 0.8 },
    });
    expect(assetAttributesSchema.parse({})).toEqual({});
    expect(assetAttributesSchema.safeParse({ focalPoint: { x: 2, y: 0 } }).success).toBe(false);
  });

  it("upload fields: boolean flag spellings", () => {
    for (const [v, b] of [
      ["true", true],
      ["1", true],
      ["false", false],
      ["0", false],
    ] as const) {
      expect(m.uploadFieldsSchema.parse({ warnAboutDuplicateImages: v })).toEqual({ warnAboutDuplicateImages: b });
    }
    expect(m.uploadFieldsSchema.safeParse({ warnAboutDuplicateImages: "yes" }).success).toBe(false);
  });

  it("list query: defaults, coercion and limits", () => {
    expect(m.listAssetsQuerySchema.parse({})).toEqual({ sort: "-createdAt", limit: 25 });
    expect(m.listAssetsQuerySchema.parse({ limit: "100", sort: "bytes" })).toMatchObject({ limit: 100, sort: "bytes" });
    expect(m.listAssetsQuerySchema.parse({ createdAfter: "2026-01-01" }).createdAfter).toEqual(new Date("2026-01-01"));
    for (const bad of [
      { limit: "0" },
      { limit: "101" },
      { limit: "2.5" },
      { sort: "name" },
      { format: "bmp" },
      { createdBefore: "x" },
    ]) {
      expect(m.listAssetsQuerySchema.safeParse(bad).success).toBe(false);
    }
  });

  it("collection names: trimmed, 1-200 chars, no control characters", () => {
    expect(m.createCollectionSchema.parse({ name: "  Trips " })).toEqual({ name: "Trips" });
    for (const name of ["", "   ", "x".repeat(201), "a\nb", 3])
      expect(m.createCollectionSchema.safeParse({ name }).success).toBe(false);
  });
});

import { compileErrors, validate } from "@readme/openapi-parser";
import {
  assetSchema,
  collectionSchema,
  fullTextQuerySchema,
  listAssetsQuerySchema,
  patchAssetSchema,
  problemSchema,
  PROBLEM_CONTENT_TYPE,
} from "../src";
import { buildOpenApiDocument, managementRoutes, toOpenApiPath, type OpenApiDocument } from "../src/openapi";

// The generated document is plain JSON; assertions walk it by key.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const doc = buildOpenApiDocument({ serverUrl: "http://localhost:3000/", mediaUrl: "http://localhost:3001" });
const op = (method: string, path: string): Json => {
  const operation = doc.paths[path]?.[method];
  if (!operation) throw new Error(`no operation ${method} ${path}`);
  return operation;
};
const resolveResponse = (response: Json): Json => {
  if (typeof response.$ref !== "string") return response;
  const name = response.$ref.replace("#/components/responses/", "");
  return doc.components.responses[name] as Json;
};

describe("buildOpenApiDocument", () => {
  it("is a valid OpenAPI 3.1 document (schema and semantic rules)", async () => {
    expect(doc.openapi).toBe("3.1.0");
    // validate() dereferences in place: give it a copy.
    const result = await validate(structuredClone(doc) as never);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);
    expect(result.warnings).toEqual([]);
  });

  it("is plain JSON (serialises and parses back unchanged)", () => {
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });

  it("uses the given server URL without a trailing slash", () => {
    expect(doc.servers).toEqual([{ url: "http://localhost:3000", description: "Management API" }]);
    expect(doc.info.description).toContain("http://localhost:3001/<transformation>");
  });

  it("has exactly one operation per route of the table, with unique operationIds", () => {
    const fromDoc = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const fromTable = managementRoutes.map((r) => `${r.method.toUpperCase()} ${toOpenApiPath(r.path)}`);
    expect(fromDoc.sort()).toEqual([...fromTable].sort());
    const ids = managementRoutes.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    // The spec's endpoints (§4.1) are all there.
    expect(fromTable).toEqual(
      expect.arrayContaining([
        "GET /v1/assets",
        "GET /v1/assets/{assetId}",
        "PATCH /v1/assets/{assetId}",
        "POST /v1/assets/upload",
        "GET /v1/assets/search/full-text",
        "GET /v1/asset-collections",
        "POST /v1/asset-collections",
        "DELETE /v1/asset-collections/{id}",
      ]),
    );
  });

  it("requires the bearer scheme on every /v1 route except the documentation and preflights, and nowhere else", () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
    });
    for (const route of managementRoutes) {
      const operation = op(route.method, toOpenApiPath(route.path));
      const isDocs = route.path === "/v1/openapi.json" || route.path === "/docs";
      // A CORS preflight carries no token: the resumable uploads' OPTIONS are public.
      const expectAuth = route.path.startsWith("/v1/") && !isDocs && route.method !== "options";
      expect([route.path, operation.security]).toEqual([route.path, expectAuth ? [{ bearerAuth: [route.scope] }] : []]);
      // Every authenticated operation names the scope it needs.
      if (expectAuth) expect([route.path, operation["x-required-scope"]]).toEqual([route.path, route.scope]);
      expect([route.path, "401" in operation.responses]).toEqual([route.path, expectAuth]);
    }
  });

  it("answers every error as application/problem+json with the Problem schema generated from zod", () => {
    const problem = doc.components.schemas.Problem as Json;
    expect(Object.keys(problem.properties).sort()).toEqual(Object.keys(problemSchema.shape).sort());
    expect(problem.required.sort()).toEqual(["status", "title", "type"]);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, raw] of Object.entries(operation.responses as Json)) {
          if (Number(status) < 400 || Number(status) === 503) continue;
          const response = resolveResponse(raw as Json);
          expect([method, path, status, Object.keys(response.content)]).toEqual([
            method,
            path,
            status,
            [PROBLEM_CONTENT_TYPE],
          ]);
          expect(response.content[PROBLEM_CONTENT_TYPE].schema).toEqual({ $ref: "#/components/schemas/Problem" });
        }
      }
    }
    expect(
      resolveResponse(op("get", "/v1/assets/{assetId}").responses["401"]).headers["WWW-Authenticate"],
    ).toBeDefined();
    for (const response of Object.values(doc.components.responses) as Json[]) {
      const example = response.content[PROBLEM_CONTENT_TYPE].example;
      expect(problemSchema.safeParse(example).error).toBeUndefined();
      expect(response.description.startsWith(`${example.status}: `)).toBe(true);
    }
  });

  it("lists the status codes the API fixes for each operation", () => {
    const statuses = (method: string, path: string) => Object.keys(op(method, path).responses).map(Number);
    // Every authenticated operation may answer 401, 403 (scope) and 429 (rate limit).
    expect(statuses("post", "/v1/assets/upload")).toEqual([201, 400, 401, 403, 413, 415, 422, 429, 500]);
    expect(statuses("get", "/v1/assets")).toEqual([200, 400, 401, 403, 429, 500]);
    expect(statuses("get", "/v1/assets/{assetId}")).toEqual([200, 401, 403, 404, 429, 500]);
    expect(statuses("patch", "/v1/assets/{assetId}")).toEqual([200, 400, 401, 403, 404, 415, 429, 500]);
    expect(statuses("post", "/v1/asset-collections")).toEqual([201, 400, 401, 403, 409, 415, 429, 500]);
    expect(statuses("delete", "/v1/asset-collections/{id}")).toEqual([204, 400, 401, 403, 404, 429, 500]);
    // 204 has no body; 201s carry Location.
    expect(op("delete", "/v1/asset-collections/{id}").responses["204"].content).toBeUndefined();
    expect(op("post", "/v1/assets/upload").responses["201"].headers.Location).toBeDefined();
    expect(op("post", "/v1/asset-collections").responses["201"].headers.Location).toBeDefined();
  });

  it("describes the upload as multipart/form-data with a required binary file part and the zod fields", () => {
    const body = op("post", "/v1/assets/upload").requestBody;
    expect(Object.keys(body.content)).toEqual(["multipart/form-data"]);
    const schema = body.content["multipart/form-data"].schema;
    expect(schema.required).toEqual(["file"]);
    expect(schema.properties.file).toMatchObject({ type: "string", format: "binary" });
    expect(schema.properties.collectionId).toMatchObject({ type: "string" });
    expect(schema.properties.warnAboutDuplicateImages.enum.sort()).toEqual(["0", "1", "false", "true"]);
    expect(op("post", "/v1/assets/upload").responses["201"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/UploadResult",
    });
    const upload = doc.components.schemas.UploadResult as Json;
    expect(upload.properties.duplicates.type).toBe("array");
    expect(upload.properties.duplicates.items).toEqual({ $ref: "#/components/schemas/DuplicateMatch" });
    expect((doc.components.schemas.DuplicateMatch as Json).properties.match.enum).toEqual(["exact", "similar"]);
  });

  it("derives query parameters from the zod query schemas (names, requiredness, ranges, defaults)", () => {
    const list = op("get", "/v1/assets").parameters as Json[];
    expect(list.map((p) => p.name).sort()).toEqual(Object.keys(listAssetsQuerySchema.shape).sort());
    for (const p of list) expect([p.name, p.in, p.required]).toEqual([p.name, "query", false]);
    const limit = list.find((p) => p.name === "limit")!;
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 25 });
    expect(limit.description).toBe("Page size, 1-100");
    expect(list.find((p) => p.name === "sort")!.schema.enum).toContain("-createdAt");

    expect(list.find((p) => p.name === "facets")!.description).toContain("tags, collectionId, format");

    const fullText = op("get", "/v1/assets/search/full-text").parameters as Json[];
    expect(fullText.find((p) => p.name === "facets")).toMatchObject({ in: "query", required: false });
    expect(fullText.map((p) => p.name).sort()).toEqual(Object.keys(fullTextQuerySchema.shape).sort());
    expect(fullText.find((p) => p.name === "q")).toMatchObject({
      in: "query",
      required: true,
      schema: { type: "string", minLength: 1 },
    });
  });

  it("declares path parameters as required", () => {
    for (const [method, path, name] of [
      ["get", "/v1/assets/{assetId}", "assetId"],
      ["patch", "/v1/assets/{assetId}", "assetId"],
      ["delete", "/v1/asset-collections/{id}", "id"],
    ] as const) {
      expect(op(method, path).parameters.filter((p: Json) => p.in === "path")).toEqual([
        expect.objectContaining({ name, in: "path", required: true }),
      ]);
    }
  });

  it("generates the resource schemas from zod, shared through components", () => {
    const asset = doc.components.schemas.Asset as Json;
    expect(Object.keys(asset.properties).sort()).toEqual(Object.keys(assetSchema.shape).sort());
    expect(asset.required.sort()).toEqual(Object.keys(assetSchema.shape).sort());
    expect(asset.properties.userTitle.type).toEqual(["string", "null"]);
    expect(asset.properties.createdAt.format).toBe("date-time");
    expect(asset.properties.width).toEqual({
      type: "integer",
      description:
        "Width in pixels as displayed: after the EXIF orientation (5-8 swap the stored width and height), of the first frame or page",
    });
    const collection = doc.components.schemas.Collection as Json;
    expect(Object.keys(collection.properties).sort()).toEqual(Object.keys(collectionSchema.shape).sort());
    expect((doc.components.schemas.AssetList as Json).properties.assets.items).toEqual({
      $ref: "#/components/schemas/ListedAsset",
    });
    // A listed asset has every field of an asset; the heavy ones only when ?include= names them.
    const listed = doc.components.schemas.ListedAsset as Json;
    expect(Object.keys(listed.properties).sort()).toEqual(Object.keys(assetSchema.shape).sort());
    expect(listed.required.sort()).toEqual(
      Object.keys(assetSchema.shape)
        .filter((k) => k !== "placeholderDataUrl" && k !== "exif")
        .sort(),
    );
    expect((doc.components.schemas.CollectionList as Json).properties.collections.items).toEqual({
      $ref: "#/components/schemas/Collection",
    });
    // Facets beside the page, on the list and on the full-text result.
    for (const name of ["AssetList", "FullTextResult"]) {
      const result = doc.components.schemas[name] as Json;
      expect(Object.keys(result.properties.facets.properties).sort()).toEqual(["collectionId", "format", "tags"]);
      expect(result.properties.facets.properties.tags.items).toMatchObject({
        required: ["value", "count"],
        properties: { value: { type: "string" }, count: { type: "integer" } },
      });
      expect(result.properties.facetsAreEstimates).toMatchObject({ const: true });
      expect(result.required).not.toContain("facets");
    }
    // Request bodies are generated on zod's input side: what a client sends.
    const patch = doc.components.schemas.AssetPatch as Json;
    expect(Object.keys(patch.properties).sort()).toEqual(Object.keys(patchAssetSchema.shape).sort());
    expect(patch.additionalProperties).toBe(false);
    expect(patch.properties.userTags).toMatchObject({
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 64 },
    });
    expect(op("patch", "/v1/assets/{assetId}").requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/AssetPatch",
    });
    expect(doc.components.schemas.CollectionCreate).toMatchObject({
      required: ["name"],
      properties: { name: { type: "string", minLength: 1, maxLength: 200 } },
    });
  });

  it("rejects a route table with a duplicate method + path", () => {
    const [first] = managementRoutes;
    expect(() => buildOpenApiDocument({ serverUrl: "http://x", routes: [first!, first!] })).toThrow(/duplicate route/);
  });

  it("turns Express path parameters into OpenAPI templates", () => {
    expect(toOpenApiPath("/v1/assets/:assetId")).toBe("/v1/assets/{assetId}");
    expect(toOpenApiPath("/a/:x/b/:y_z")).toBe("/a/{x}/b/{y_z}");
  });
});

// Type-level check: the document type is what the docs router serves.
export type _Doc = OpenApiDocument;

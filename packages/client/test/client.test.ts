import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import express from "express";
import { ApiError, MediaPlatformClient, ResponseValidationError, mediaUrl, step, type AssetDto } from "../src";
import { docsRouter } from "../../../services/management/src/docs";
import { FIXTURES, startTestManagement, type RunningTestManagement } from "./support";

const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name));

async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected an ApiError");
}

describe("MediaPlatformClient against the running management service", () => {
  let server: RunningTestManagement;
  let client: MediaPlatformClient;

  beforeAll(async () => {
    server = await startTestManagement();
    client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-client") });
  });
  afterAll(async () => {
    await server.close();
  });

  it("uploads from a Buffer and from a file path, returning typed assets", async () => {
    const fromBuffer = await client.uploadAsset({ file: fixture("rocket.jpg"), filename: "rocket.jpg" });
    expect(fromBuffer).toMatchObject({
      workspaceId: "ws-client",
      originalFilename: "rocket.jpg",
      format: "jpeg",
      mimeType: "image/jpeg",
      collectionId: null,
      userTags: [],
    });
    expect(fromBuffer.width).toBeGreaterThan(0);
    expect(fromBuffer.bytes).toBe(fixture("rocket.jpg").length);
    expect(fromBuffer.duplicates).toBeUndefined();

    const fromPath = await client.uploadAsset({ file: path.join(FIXTURES, "coffee.png") });
    expect(fromPath).toMatchObject({
      originalFilename: "coffee.png",
      format: "png",
      bytes: fixture("coffee.png").length,
    });
    expect(fromPath.id).not.toBe(fromBuffer.id);
    expect(fromPath.mediaUrl).toBe(`http://media.test/thumbnail:size=256/${fromPath.id}.png`);
  });

  it("covers the lifecycle: trash, list the trash, restore, replace, versions, batch, permanent delete", async () => {
    const asset = await client.uploadAsset({ file: fixture("rocket.jpg"), filename: "rocket.jpg" });
    await client.deleteAsset(asset.id);
    expect((await apiError(client.getAsset(asset.id))).status).toBe(404);
    const trash = await client.listAssets({ trashed: true });
    expect(trash.assets.find((a) => a.id === asset.id)?.deletedAt).toEqual(expect.any(String));
    expect((await client.restoreAsset(asset.id)).deletedAt).toBeNull();
    const replaced = await client.replaceOriginal(asset.id, { file: path.join(FIXTURES, "coffee.png") });
    expect(replaced).toMatchObject({ version: 2, format: "png", originalFilename: "coffee.png" });
    const versions = await client.listAssetVersions(asset.id);
    expect(versions.versions.map((v) => [v.version, v.format])).toEqual([[1, "jpeg"]]);
    expect(await client.restoreAssetVersion(asset.id, 1)).toMatchObject({ version: 3, format: "jpeg" });
    const batch = await client.batchAssets({ action: "addTags", ids: [asset.id, asset.id], value: ["c"] });
    expect(batch).toEqual({ matched: 1, changed: 1, notFound: [] });
    await client.deleteAsset(asset.id, { permanent: true });
    expect((await apiError(client.restoreAsset(asset.id))).status).toBe(404);
  });

  it("reports exact duplicates when warnAboutDuplicateImages is set", async () => {
    const first = await client.uploadAsset({
      file: path.join(FIXTURES, "chelsea.png"),
      warnAboutDuplicateImages: true,
    });
    expect(first.duplicates?.find((d) => d.match === "exact")).toBeUndefined();
    const again = await client.uploadAsset({
      file: path.join(FIXTURES, "chelsea.png"),
      warnAboutDuplicateImages: true,
    });
    expect(again.duplicates).toEqual(expect.arrayContaining([{ assetId: first.id, match: "exact", distance: 0 }]));
  });

  it("reads and patches an asset; null clears; a collection can be assigned and removed", async () => {
    const asset = await client.uploadAsset({ file: fixture("camera.png"), filename: "camera.png" });
    const collection = await client.createCollection("Cameras");
    const patched = await client.updateAsset(asset.id, {
      userTitle: "  Camera man  ",
      userTags: ["bw", "bw", " portrait "],
      userCaption: "A photographer",
      collectionId: collection.id,
    });
    expect(patched).toMatchObject({
      userTitle: "Camera man",
      userTags: ["bw", "portrait"],
      userCaption: "A photographer",
      collectionId: collection.id,
    });
    expect(await client.getAsset(asset.id)).toEqual(patched);
    const cleared = await client.updateAsset(asset.id, { userTitle: null, collectionId: null });
    expect(cleared).toMatchObject({ userTitle: null, collectionId: null, userTags: ["bw", "portrait"] });

    // The focal point comes from the contracts' PATCH schema, typed and parsed like every field.
    const focused = await client.updateAsset(asset.id, { focalPoint: { x: 0.25, y: 0.75 } });
    expect(focused.focalPoint).toEqual({ x: 0.25, y: 0.75 });
    const refused = await apiError(client.updateAsset(asset.id, { focalPoint: { x: 1.5, y: 0.75 } }));
    expect(refused.status).toBe(400);
    expect(refused.problem.errors).toEqual([
      { path: "body.focalPoint.x", message: expect.stringMatching(/at most 1/) },
    ]);
    expect((await client.updateAsset(asset.id, { focalPoint: null })).focalPoint).toBeNull();
  });

  it("creates, lists and deletes collections; a duplicate name is an ApiError 409 with the problem body", async () => {
    const created = await client.createCollection("Holiday");
    expect(created).toMatchObject({ name: "Holiday", assetCount: 0 });
    const err = await apiError(client.createCollection("Holiday"));
    expect(err.status).toBe(409);
    expect(err.problem).toMatchObject({
      status: 409,
      title: expect.any(String),
      type: expect.stringContaining("conflict"),
    });
    expect(err.message).toContain("409");

    const asset = await client.uploadAsset({
      file: fixture("astronaut.png"),
      filename: "astronaut.png",
      collectionId: created.id,
    });
    expect(asset.collectionId).toBe(created.id);
    const list = await client.listCollections();
    expect(list.count).toBe(list.collections.length);
    expect(list.collections.find((c) => c.id === created.id)).toMatchObject({ name: "Holiday", assetCount: 1 });
    expect(await client.findCollectionByName("Holiday")).toMatchObject({ id: created.id });
    expect(await client.findCollectionByName("Nope")).toBeUndefined();

    await expect(client.deleteCollection(created.id)).resolves.toBeUndefined();
    expect((await client.getAsset(asset.id)).collectionId).toBeNull();
    expect((await apiError(client.deleteCollection(created.id))).status).toBe(404);
  });

  it("lists with filters and walks every page with the cursor iterator", async () => {
    const ws = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-pages") });
    const uploaded: AssetDto[] = [];
    for (const name of ["astronaut.png", "camera.png", "chelsea.png", "coffee.png", "rocket.jpg"]) {
      uploaded.push(await ws.uploadAsset({ file: path.join(FIXTURES, name) }));
    }
    await ws.updateAsset(uploaded[1]!.id, { userTags: ["pick"] });
    await ws.updateAsset(uploaded[3]!.id, { userTags: ["pick"] });

    const first = await ws.listAssets({ limit: 2 });
    expect(first.count).toBe(5);
    expect(first.assets).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));

    const pages = [];
    for await (const page of ws.assetPages({ limit: 2 })) pages.push(page);
    expect(pages.map((p) => p.assets.length)).toEqual([2, 2, 1]);
    expect(pages[2]!.nextCursor).toBeNull();

    const all: string[] = [];
    for await (const asset of ws.iterateAssets({ limit: 2, sort: "createdAt" })) all.push(asset.id);
    expect(all).toEqual(uploaded.map((a) => a.id)); // oldest first, each once

    const picked: string[] = [];
    for await (const asset of ws.iterateAssets({ tag: "pick", limit: 1 })) picked.push(asset.id);
    expect(picked.sort()).toEqual([uploaded[1]!.id, uploaded[3]!.id].sort());

    expect((await ws.listAssets({ format: "jpeg" })).assets.map((a) => a.id)).toEqual([uploaded[4]!.id]);
    expect((await ws.listAssets({ search: "COFFEE" })).assets.map((a) => a.id)).toEqual([uploaded[3]!.id]);
    expect((await ws.listAssets({ createdAfter: new Date(Date.now() + 3_600_000) })).count).toBe(0);
    expect((await ws.listAssets({ createdBefore: new Date(Date.now() + 3_600_000).toISOString() })).count).toBe(5);

    const faceted = await ws.listAssets({ limit: 1, facets: ["tags", "format"] });
    expect(faceted.facets).toEqual({
      tags: [{ value: "pick", count: 2 }],
      format: [
        { value: "png", count: 4 },
        { value: "jpeg", count: 1 },
      ],
    });
    expect(faceted.facetsAreEstimates).toBeUndefined();
  });

  it("searches full text, ranked with scores", async () => {
    const ws = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-search") });
    const rocket = await ws.uploadAsset({ file: fixture("rocket.jpg"), filename: "rocket.jpg" });
    await ws.updateAsset(rocket.id, { userTitle: "Launch of the rocket", userDescription: "A spacecraft lifting off" });
    const other = await ws.uploadAsset({ file: fixture("coffee.png"), filename: "coffee.png" });
    await ws.updateAsset(other.id, { userTitle: "Morning coffee" });
    const result = await ws.searchAssets("launching", { limit: 10 });
    expect(result.assets.map((a) => a.id)).toEqual([rocket.id]);
    expect(result.count).toBe(1);
    expect(result.assets[0]!.score).toBeGreaterThan(0);
    expect((await ws.searchAssets("launching", { facets: ["format"] })).facets).toEqual({
      format: [{ value: "jpeg", count: 1 }],
    });
  });

  it("throws ApiError with the problem body for 400, 401, 404, 415 and 422", async () => {
    const bad = await apiError(client.listAssets({ limit: 1000 }));
    expect(bad.status).toBe(400);
    expect(bad.fieldErrors).toEqual([expect.objectContaining({ path: "query.limit" })]);

    const missing = await apiError(client.getAsset("0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"));
    expect(missing.status).toBe(404);
    expect(missing.problem.status).toBe(404);

    const anonymous = new MediaPlatformClient({ baseUrl: server.url, token: "not-a-jwt" });
    const unauthorized = await apiError(anonymous.listCollections());
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get("www-authenticate")).toMatch(/^Bearer/);

    const text = await apiError(client.uploadAsset({ file: Buffer.from("just some text\n"), filename: "notes.txt" }));
    expect(text.status).toBe(415);
    const truncated = await apiError(client.uploadAsset({ file: path.join(FIXTURES, "truncated.jpg") }));
    expect(truncated.status).toBe(422);
    expect(truncated.problem.detail).toEqual(expect.any(String));
  });

  it("keeps workspaces apart: another workspace's asset is a 404", async () => {
    const mine = await client.uploadAsset({ file: fixture("rocket.jpg"), filename: "mine.jpg" });
    const other = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-other") });
    expect((await apiError(other.getAsset(mine.id))).status).toBe(404);
  });

  it("asks a token function for the current token on every request", async () => {
    const tokens: string[] = [];
    const rotating = new MediaPlatformClient({
      baseUrl: `${server.url}/`,
      token: async () => {
        const t = server.token("ws-rotating", `user-${tokens.length}`);
        tokens.push(t);
        return t;
      },
    });
    await rotating.listCollections();
    await rotating.listAssets();
    expect(tokens).toHaveLength(2);
  });

  it("builds media URLs for uploaded assets with the same contracts", async () => {
    const asset = await client.uploadAsset({ file: fixture("rocket.jpg"), filename: "rocket.jpg" });
    expect(mediaUrl("http://media.test", asset.id, "jpg", [step("thumbnail", { size: 256 })])).toBe(asset.mediaUrl);
  });
});

describe("MediaPlatformClient edge cases (local servers)", () => {
  function serve(app: express.Express): Promise<{ url: string; close(): Promise<void> }> {
    const server = http.createServer(app);
    return new Promise((resolve) =>
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          close: () => new Promise<void>((r) => server.close(() => r())),
        }),
      ),
    );
  }

  it("fetches the OpenAPI document", async () => {
    const s = await serve(express().use(docsRouter()));
    try {
      const doc = await new MediaPlatformClient({ baseUrl: s.url, token: "unused" }).getOpenApiDocument();
      expect(doc.openapi).toBe("3.1.0");
    } finally {
      await s.close();
    }
  });

  it("rejects a 2xx body that breaks the contract, unless validation is off", async () => {
    const app = express();
    app.get("/v1/asset-collections", (_req, res) => {
      res.json({ count: "three", collections: [] });
    });
    const s = await serve(app);
    try {
      const strict = new MediaPlatformClient({ baseUrl: s.url, token: "t" });
      const err = await strict.listCollections().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ResponseValidationError);
      expect((err as ResponseValidationError).issues).toEqual([expect.objectContaining({ path: "count" })]);
      const lax = new MediaPlatformClient({ baseUrl: s.url, token: "t", validateResponses: false });
      expect(await lax.listCollections()).toEqual({ count: "three", collections: [] });
    } finally {
      await s.close();
    }
  });

  it("turns a non-problem error body into a synthesised problem", async () => {
    const app = express();
    app.get("/v1/asset-collections", (_req, res) => {
      res.status(502).type("text/html").send("<h1>Bad gateway</h1>");
    });
    const s = await serve(app);
    try {
      const err = await apiError(new MediaPlatformClient({ baseUrl: s.url, token: "t" }).listCollections());
      expect(err.status).toBe(502);
      expect(err.problem).toEqual({
        type: "about:blank",
        title: "Bad Gateway",
        status: 502,
        detail: "<h1>Bad gateway</h1>",
      });
    } finally {
      await s.close();
    }
  });

  it("refuses a base URL that is not http(s)", () => {
    expect(() => new MediaPlatformClient({ baseUrl: "localhost:3000", token: "t" })).toThrow(/http\(s\) URL/);
  });
});

import zlib from "node:zlib";
import fc from "fast-check";
import request from "supertest";
import { ASSET_SORTS } from "@media-platform/contracts";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

/** Issue 8, defects 4-6: Unicode text, forged cursors and query values, smaller defects. */
let t: TestApp;
const WS = "ws-hardening";
let assetId: string;

beforeAll(async () => {
  t = await createTestApp();
  for (const [file, name] of [
    ["rocket.jpg", "a.jpg"],
    ["palette_color.png", "b.png"],
    ["camera.png", "c.png"],
  ] as const) {
    const res = await upload(t.as(WS), fixture(file), name);
    expect(res.status).toBe(201);
    assetId = res.body.id;
  }
});
afterAll(async () => {
  await t.close();
});

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o), "utf8").toString("base64url");

/** A PNG whose header declares width x height (grey, 8 bit) with a token IDAT: a decompression bomb's header. */
function pngHeader(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(Buffer.alloc(width + 1))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

describe("defect 4: Unicode text", () => {
  it("a UTF-8 filename (raw bytes in the part header, as curl sends it) is stored as sent, NFC, and found by search", async () => {
    const boundary = "----utf8boundary";
    const name = "cafe\u0301-日本.png"; // decomposed é: stored composed
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: image/png\r\n\r\n`,
        "utf8",
      ),
      fixture("palette_color.png"),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await t
      .as(WS)
      .post("/v1/assets/upload")
      .set("Content-Type", `multipart/form-data; boundary=${boundary}`)
      .send(body);
    expect(res.status).toBe(201);
    expect(res.body.originalFilename).toBe("café-日本.png");
    expect(res.body.originalFilename).toBe("café-日本.png".normalize("NFC"));
    const found = await t.as(WS).get("/v1/assets").query({ search: "café-日本" });
    expect(found.body.assets.map((a: { id: string }) => a.id)).toEqual([res.body.id]);
  });

  it("titles, tags, captions and descriptions are stored NFC; search matches either form", async () => {
    const res = await t
      .as(WS)
      .patch(`/v1/assets/${assetId}`)
      .send({
        userTitle: "Cre\u0300me bru\u0302le\u0301e",
        userTags: ["e\u0301te\u0301"],
        userCaption: "A\u030a",
        userDescription: "n\u0303",
      });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      userTitle: "Crème brûlée",
      userTags: ["été"],
      userCaption: "Å",
      userDescription: "ñ",
    });
    expect(res.body.userTitle.length).toBe("Crème brûlée".length);
    const byDecomposed = await t.as(WS).get("/v1/assets").query({ search: "bru\u0302le\u0301e" });
    expect(byDecomposed.body.assets.map((a: { id: string }) => a.id)).toEqual([assetId]);
    const byTag = await t.as(WS).get("/v1/assets").query({ tag: "e\u0301te\u0301" });
    expect(byTag.body.count).toBe(1);
  });

  it("400 for lone surrogates and control characters in every text field", async () => {
    for (const body of [
      { userTitle: "a\ud800b" },
      { userCaption: "\udc00" },
      { userDescription: "x\u0007" },
      { userTitle: "bell\u001b[31m" },
      { userTags: ["ok", "a\ud83d"] },
      { userCaption: "c1\u0085control" },
    ]) {
      const res = await t.as(WS).patch(`/v1/assets/${assetId}`).send(body);
      expectProblem(res, 400);
      expect(res.body.errors[0].message).toMatch(/surrogate|control/);
    }
    expectProblem(await t.as(WS).post("/v1/asset-collections").send({ name: "x\ud800" }), 400);
    expectProblem(await t.as(WS).get("/v1/assets").query({ search: "a\u0001" }), 400);
    // Multi-line text keeps its line breaks and tabs.
    const ok = await t.as(WS).patch(`/v1/assets/${assetId}`).send({ userCaption: "line 1\nline 2\ttab" });
    expect(ok.status).toBe(200);
    expect(ok.body.userCaption).toBe("line 1\nline 2\ttab");
  });
});

describe("defect 5: forged cursors and query values are 400s", () => {
  const list = (query: Record<string, string>) => t.as(WS).get("/v1/assets").query(query);

  it("cursor ids that are not UUIDs, a bytes value past BIGINT, expanded-year dates", async () => {
    for (const [sort, cursor] of [
      ["-createdAt", { s: "-createdAt", v: "2026-01-01T00:00:00.000Z", id: "-".repeat(36) }],
      ["-createdAt", { s: "-createdAt", v: "2026-01-01T00:00:00.000Z", id: "a".repeat(36) }],
      ["bytes", { s: "bytes", v: "9223372036854775808", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }],
      ["bytes", { s: "bytes", v: "9999999999999999999", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }],
      ["-createdAt", { s: "-createdAt", v: "-000001-01-01T00:00:00.000Z", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }],
      ["-createdAt", { s: "-createdAt", v: "+275760-09-13T00:00:00.000Z", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }],
      ["userTitle", { s: "userTitle", v: "a\u0000b", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }],
    ] as const) {
      const res = await list({ sort, cursor: b64(cursor) });
      expectProblem(res, 400);
      expect(res.body.errors).toEqual([{ path: "query.cursor", message: "not a cursor of this listing" }]);
    }
    // The largest valid BIGINT is a valid cursor value.
    const max = await list({
      sort: "bytes",
      cursor: b64({ s: "bytes", v: "9223372036854775807", id: "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f" }),
    });
    expect(max.status).toBe(200);
    expect(max.body.assets).toEqual([]);
  });

  it("createdAfter/createdBefore outside four-digit years are 400", async () => {
    for (const v of ["-000001-01-01T00:00:00Z", "+275760-09-13T00:00:00Z", "0000-01-01", "2026-1-1", "yesterday"]) {
      const res = await list({ createdAfter: v });
      expectProblem(res, 400);
      expect(res.body.errors[0].path).toBe("query.createdAfter");
    }
    const all = (await list({})).body.count as number;
    expect(all).toBeGreaterThanOrEqual(3);
    expect((await list({ createdAfter: "2020-01-01T00:00:00Z", createdBefore: "9999-12-31" })).body.count).toBe(all);
  });

  it("property: any generated cursor is answered 200 or 400, never 5xx", async () => {
    const uuidLike = fc.oneof(
      fc.uuid(),
      fc.string({ minLength: 36, maxLength: 36, unit: fc.constantFrom("-", "a", "f", "0", "9", "g") }),
      fc.stringMatching(/^[0-9a-f]{32,36}$/),
    );
    const value = fc.oneof(
      fc.constant(null),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
      fc.string({ unit: "binary", maxLength: 30 }),
      fc.integer(),
    );
    const sort = fc.constantFrom(...ASSET_SORTS);
    await fc.assert(
      fc.asyncProperty(sort, value, uuidLike, fc.boolean(), async (s, v, id, sameSort) => {
        const res = await list({ sort: s, cursor: b64({ s: sameSort ? s : "bytes", v, id }) });
        expect([200, 400]).toContain(res.status);
        if (res.status === 400) expect(res.body.errors[0].path).toBe("query.cursor");
      }),
      { numRuns: 120 },
    );
  });

  it("property: generated query strings (dates, limits, text) give 200 or 400, never 5xx", async () => {
    const dateish = fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc
        .integer({ min: -300000, max: 300000 })
        .map((y) => `${y < 0 ? "-" : "+"}${String(Math.abs(y)).padStart(6, "0")}-01-01T00:00:00Z`),
      fc.string({ maxLength: 30 }),
    );
    const query = fc.record(
      {
        createdAfter: dateish,
        createdBefore: dateish,
        limit: fc.oneof(
          fc.integer({ min: -5, max: 200 }).map(String),
          fc.constantFrom("0x10", "1e1", " 5", "5 ", "+5", ""),
        ),
        search: fc.string({ unit: "binary", maxLength: 220 }),
        tag: fc.string({ unit: "binary", maxLength: 70 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const res = await list(q);
        expect([200, 400]).toContain(res.status);
      }),
      { numRuns: 120 },
    );
  });
});

describe("defect 6: smaller defects", () => {
  it("a PNG bomb's 422 names the pixel limit (before any decode)", async () => {
    const res = await upload(t.as(WS), pngHeader(20000, 20000), "bomb.png");
    expectProblem(res, 422);
    expect(res.body.detail).toBe(
      "The image is 20000x20000 = 400000000 pixels, above the limit of 100000000 pixels (LIMIT_INPUT_PIXELS)",
    );
  });

  it("a query over 200 characters says so, not 'must be a string'", async () => {
    for (const [url, key] of [
      ["/v1/assets", "search"],
      ["/v1/assets/search/full-text", "q"],
    ] as const) {
      const res = await t
        .as(WS)
        .get(url)
        .query({ [key]: "x".repeat(201) });
      expectProblem(res, 400);
      expect(res.body.errors).toEqual([{ path: `query.${key}`, message: "must be at most 200 characters" }]);
    }
  });

  it("an empty PATCH body is a 400", async () => {
    const res = await t.as(WS).patch(`/v1/assets/${assetId}`).set("Content-Type", "application/json").send("{}");
    expectProblem(res, 400);
    expect(res.body.errors[0].path).toBe("body");
  });

  it("limit accepts decimal digits only: 0x10, 1e1, ' 5', '+5' are 400", async () => {
    for (const limit of ["0x10", "1e1", " 5", "5 ", "+5", "5.0", "0", "101", ""]) {
      for (const url of ["/v1/assets", "/v1/assets/search/full-text?q=x"]) {
        const res = await t.as(WS).get(url).query({ limit });
        expectProblem(res, 400);
        expect(res.body.errors).toEqual([{ path: "query.limit", message: "must be an integer 1-100" }]);
      }
    }
    const ok = await t.as(WS).get("/v1/assets").query({ limit: "2" });
    expect([ok.status, ok.body.assets.length]).toEqual([200, 2]);
  });

  it("X-Content-Type-Options: nosniff on every management response", async () => {
    for (const res of [
      await t.as(WS).get("/v1/assets"),
      await t.as(WS).get("/v1/assets/nope"),
      await request(t.app).get("/v1/assets"),
      await request(t.app).get("/healthz"),
      await request(t.app).get("/readyz"),
      await request(t.app).get("/metrics"),
      await request(t.app).get("/v1/openapi.json"),
      await request(t.app).get("/docs"),
    ]) {
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
    }
  });
});

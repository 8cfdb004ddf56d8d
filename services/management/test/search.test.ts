import { spellingCorrections } from "../src/assets/search";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-search";
const OTHER = "ws-search-other";
const ids: Record<string, string> = {};

async function make(key: string, file: string, filename: string, meta: Record<string, unknown>) {
  const res = await upload(t.as(WS), fixture(file), filename);
  expect(res.status).toBe(201);
  const p = await t.as(WS).patch(`/v1/assets/${res.body.id}`).send(meta);
  expect(p.status).toBe(200);
  ids[key] = res.body.id;
}

beforeAll(async () => {
  t = await createTestApp();
  const img = "palette_color.png";
  await make("astronaut", img, "IMG_0001.png", {
    userTitle: "Astronaut portrait",
    userTags: ["nasa", "space"],
    userCaption: "Eileen Collins in her suit",
  });
  await make("rocketTag", img, "IMG_0002.png", {
    userTitle: "Launch day",
    userTags: ["rocket", "falcon"],
    userDescription: "Falcon 9 lifting off",
  });
  await make("rocketCaption", img, "IMG_0003.png", {
    userTitle: "Crowd watching",
    userCaption: "a rocket in the distance",
  });
  await make("rocketFile", img, "rocket-launch.png", { userTitle: "Blue sky" });
  await make("rocketTitle", img, "IMG_0004.png", { userTitle: "Rocket engines" });
  await make("cats", img, "IMG_0005.png", { userTitle: "Cats running in the garden", userTags: ["pets"] });
  await make("coffee", img, "IMG_0006.png", {
    userTitle: "Morning coffee",
    userDescription: "Espresso cup on a wooden table",
  });
  await make("pct", img, "IMG_0008.png", { userTitle: "Sale 100% off_now" });
  await make("catDog", img, "IMG_0007.png", { userTitle: "Cat and dog", userTags: ["pets"] });
  // A common word in three fields, for the spelling correction.
  await make("mountainTitle", img, "IMG_0010.png", { userTitle: "Mountain lake at dawn" });
  await make("mountainTag", img, "IMG_0011.png", { userTitle: "Weekend trip", userTags: ["mountains", "hiking"] });
  await make("mountainCaption", img, "IMG_0012.png", {
    userTitle: "Summit view",
    userCaption: "clouds over the mountains",
  });
  // A typo that was fixed: "glaciar" stays in the dictionary (append-only) but matches no asset.
  await make("glacier", img, "IMG_0013.png", { userTitle: "Glaciar tongue" });
  expect((await t.as(WS).patch(`/v1/assets/${ids.glacier}`).send({ userTitle: "Glacier tongue" })).status).toBe(200);
  // Another workspace with the same words: never returned.
  const other = await upload(t.as(OTHER), fixture(img), "rocket.png");
  await t.as(OTHER).patch(`/v1/assets/${other.body.id}`).send({ userTitle: "Rocket astronaut coffee cat" });
  // ... and words of its own, which must never be suggested to WS.
  const secret = await upload(t.as(OTHER), fixture(img), "hangar.png");
  await t.as(OTHER).patch(`/v1/assets/${secret.body.id}`).send({ userTitle: "Zeppelin over the hangar" });
});
afterAll(async () => {
  await t.close();
});

const search = (q: string) => t.as(WS).get("/v1/assets/search/full-text").query({ q });
const found = (body: { assets: Array<{ id: string }> }) => body.assets.map((a) => a.id);

describe("GET /v1/assets/search/full-text", () => {
  it("ranks by field weight: title > tags > caption/description > filename", async () => {
    const res = await search("rocket");
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(4);
    expect(found(res.body)).toEqual([ids.rocketTitle, ids.rocketTag, ids.rocketCaption, ids.rocketFile]);
    const scores = res.body.assets.map((a: { score: number }) => a.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(scores[scores.length - 1]).toBeGreaterThan(0);
    expect(res.body.assets[0]).toMatchObject({
      id: ids.rocketTitle,
      userTitle: "Rocket engines",
      mediaUrl: expect.any(String),
      score: expect.any(Number),
    });
  });

  it("stems english words: 'run' finds 'running', 'cat' finds 'Cats'", async () => {
    expect(found((await search("run")).body)).toEqual([ids.cats]);
    expect(found((await search("cat")).body).sort()).toEqual([ids.cats, ids.catDog].sort());
  });

  it("web-search syntax: quoted phrase, -exclusion, or", async () => {
    expect(found((await search('"morning coffee"')).body)).toEqual([ids.coffee]);
    expect(found((await search('"coffee morning"')).body)).toEqual([]);
    expect(found((await search("cat -dog")).body)).toEqual([ids.cats]);
    expect(found((await search("espresso or nasa")).body).sort()).toEqual([ids.coffee, ids.astronaut].sort());
    expect(found((await search("pets garden")).body)).toEqual([ids.cats]);
  });

  it("prefix match on the last word", async () => {
    expect(found((await search("astro")).body)).toEqual([ids.astronaut]);
    expect(found((await search("wooden tab")).body)).toEqual([ids.coffee]);
    expect(found((await search("espr")).body)).toEqual([ids.coffee]);
  });

  it("a small typo still finds the asset (trigram fallback)", async () => {
    const res = await search("astronuat");
    expect(found(res.body)).toEqual([ids.astronaut]);
    expect(res.body.assets[0].score).toBeGreaterThan(0);
    expect(found((await search("expresso")).body)).toEqual([ids.coffee]);
    // One letter off in a short word: word_similarity("tabel", "table") = 0.5. Alone (a disjunction
    // with its prefix: looked up inside the first ranking statement) and after another word (AND).
    expect(found((await search("tabel")).body)).toEqual([ids.coffee]);
    expect(found((await search("wooden tabel")).body)).toEqual([ids.coffee]);
    expect(found((await search("zzzqqq")).body)).toEqual([]);
  });

  it("corrects a typo of a common word through the workspace's dictionary, still ranked", async () => {
    const res = await search("montain");
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    // Title > tags > caption, as for a correctly spelled word.
    expect(found(res.body)).toEqual([ids.mountainTitle, ids.mountainTag, ids.mountainCaption]);
    const scores = res.body.assets.map((a: { score: number }) => a.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(scores[scores.length - 1]).toBeGreaterThan(0);
    // Same ranking as the correctly spelled query.
    expect(found((await search("mountain")).body)).toEqual(found(res.body));
    expect(await spellingCorrections(t.db.prisma, WS, "montain")).toEqual([
      // Both stem to one lexeme: the corrected query is as cheap as the correctly spelled one.
      { word: "montain", suggestions: ["mountain", "mountains"], lexemes: ["mountain"] },
    ]);
    // The lookup sets its trigram threshold for itself only (one statement, no transaction): the
    // connection keeps pg_trgm's default (null on a pooled connection that never loaded pg_trgm).
    for (let i = 0; i < 4; i++) {
      const [{ v }] = await t.db.prisma.$queryRaw<
        [{ v: string | null }]
      >`SELECT current_setting('pg_trgm.word_similarity_threshold', true) AS v`;
      expect(["0.6", null]).toContain(v);
    }
  });

  it("the corrected query keeps the rest of the query: known words, -exclusion, or, prefix", async () => {
    // Only the misspelled word is corrected; "hiking" must still match.
    expect(found((await search("montain hiking")).body)).toEqual([ids.mountainTag]);
    expect(found((await search("hikng montain")).body)).toEqual([ids.mountainTag]);
    expect(found((await search("montain -lake")).body)).toEqual([ids.mountainTag, ids.mountainCaption]);
    expect(found((await search("expresso or astronuat")).body).sort()).toEqual([ids.coffee, ids.astronaut].sort());
    expect(found((await search("montain lak")).body)).toEqual([ids.mountainTitle]);
    // A known word is not "corrected": nothing matches both words.
    expect(found((await search("montain cats")).body)).toEqual([]);
  });

  it("a typo fixed in the metadata leaves a stale dictionary word that still gets corrected", async () => {
    expect(found((await search("glacier")).body)).toEqual([ids.glacier]);
    const stale = await t.db.prisma.$queryRaw<
      unknown[]
    >`SELECT 1 FROM search_words WHERE workspace_id = ${WS} AND word = 'glaciar'`;
    expect(stale).toHaveLength(1);
    expect(found((await search("glaciar")).body)).toEqual([ids.glacier]);
  });

  it("suggests only words of the caller's workspace", async () => {
    // "zeppelin" exists in the other workspace only.
    expect(found((await search("zepelin")).body)).toEqual([]);
    expect(await spellingCorrections(t.db.prisma, WS, "zepelin hangr")).toEqual([]);
    expect(await spellingCorrections(t.db.prisma, OTHER, "zepelin hangr")).toEqual([
      { word: "hangr", suggestions: ["hangar"], lexemes: ["hangar"] },
      { word: "zepelin", suggestions: ["zeppelin"], lexemes: ["zeppelin"] },
    ]);
    const words = await t.db.prisma.$queryRaw<
      Array<{ workspace_id: string; word: string }>
    >`SELECT workspace_id, word FROM search_words WHERE workspace_id IN (${WS}, ${OTHER})`;
    const mine = words.filter((w) => w.workspace_id === WS).map((w) => w.word);
    expect(mine).toEqual(expect.arrayContaining(["mountain", "mountains", "hiking", "astronaut", "img", "png"]));
    expect(mine).not.toContain("zeppelin");
    expect(mine).not.toContain("hangar");
    // Tokenised like search_vector (filename split on ._-), only words a trigram match can correct.
    expect(mine.filter((w) => !/^[a-z]{3,64}$/.test(w))).toEqual([]);
    expect(words.filter((w) => w.workspace_id === OTHER).map((w) => w.word)).toEqual(
      expect.arrayContaining(["zeppelin", "hangar", "rocket"]),
    );
  });

  it("operators and odd characters never break the query", async () => {
    for (const q of [
      "&",
      "!",
      "a:*",
      "'",
      "\\",
      "rocket & | !",
      "(((",
      '"unterminated',
      "-",
      "or",
      "ünïcödé",
      "rocket:*",
      "1 <-> 2",
    ]) {
      const res = await search(q);
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body.assets)).toBe(true);
    }
  });

  it("honours limit", async () => {
    const res = await t.as(WS).get("/v1/assets/search/full-text").query({ q: "rocket", limit: 2 });
    expect(found(res.body)).toEqual([ids.rocketTitle, ids.rocketTag]);
    expect(res.body.count).toBe(2);
  });

  it("400 without q, with an empty q or an unknown parameter", async () => {
    expectProblem(await t.as(WS).get("/v1/assets/search/full-text"), 400);
    expectProblem(await search("   "), 400);
    expectProblem(await t.as(WS).get("/v1/assets/search/full-text").query({ q: "x", foo: 1 }), 400);
    expectProblem(await t.as(WS).get("/v1/assets/search/full-text?q=a&q=b"), 400);
  });

  it("is backed by GIN indexes", async () => {
    const idx = await t.db.prisma.$queryRaw<
      Array<{ indexdef: string }>
    >`SELECT indexdef FROM pg_indexes WHERE tablename = 'assets'`;
    const defs = idx.map((i) => i.indexdef).join("\n");
    expect(defs).toMatch(/USING gin \(search_vector\)/);
    expect(defs).toMatch(/USING gin \(search_text gin_trgm_ops\)/);
    const words = await t.db.prisma.$queryRaw<
      Array<{ indexdef: string }>
    >`SELECT indexdef FROM pg_indexes WHERE tablename = 'search_words'`;
    expect(words.map((i) => i.indexdef).join("\n")).toMatch(/USING gin \(word gin_trgm_ops\)/);
  });
});

describe("GET /v1/assets?search=", () => {
  it("case-insensitive substring over title, tags, caption, description, filename", async () => {
    const q = (search: string) => t.as(WS).get("/v1/assets").query({ search });
    expect(found((await q("ROCKET")).body).sort()).toEqual(
      [ids.rocketTitle, ids.rocketTag, ids.rocketCaption, ids.rocketFile].sort(),
    );
    expect(found((await q("collins")).body)).toEqual([ids.astronaut]);
    expect(found((await q("img_0006")).body)).toEqual([ids.coffee]);
    expect(found((await q("spresso")).body)).toEqual([ids.coffee]);
    expect((await q("rocket")).body.count).toBe(4);
    // LIKE wildcards are literal
    expect(found((await q("%")).body)).toEqual([ids.pct]);
    expect(found((await q("img_000_")).body)).toEqual([]);
    expect(found((await q("100%")).body)).toEqual([ids.pct]);
    expect(found((await q("% OFF_N")).body)).toEqual([ids.pct]);
  });
});

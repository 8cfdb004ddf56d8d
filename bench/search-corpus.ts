/**
 * The search bench corpus, generated inside the database with SQL (INSERT ... SELECT
 * generate_series), never through HTTP: `assets` rows for one workspace plus `otherAssets` for a
 * second. Deterministic (setseed), so every run and every database gets the same rows.
 */

/** The SQL surface the seed needs: one connection inside a transaction. */
export interface SeedTx {
  query(sql: string, params?: unknown[]): Promise<unknown[]>;
}

export const WORKSPACE = "bench-workspace";
export const OTHER_WORKSPACE = "bench-other-workspace";

/**
 * Vocabulary for the generated metadata. Words are drawn with density ~ 1/sqrt(rank), so early
 * words are frequent and late ones uncommon; families (mountain/mountains, run/running) exercise
 * stemming. "zeppelin" is injected into a handful of captions only.
 */
const WORDS = (
  "photo image picture view light blue green summer city night street portrait color sky water " +
  "people old new black white house road tree winter morning evening day red forest river " +
  "mountain beach sunset travel nature snow lake park garden family friends holiday dog cat " +
  "bridge building window door car train station market food coffee table chair book music " +
  "concert festival wedding party birthday children playing running runner run walking walk " +
  "mountains beaches sunsets rivers lakes bridges buildings windows cars trains markets flowers " +
  "flower field meadow hill valley cliff ocean sea wave waves harbor boat boats ship sail sailing " +
  "island palm sand desert dune rock rocks stone canyon waterfall fountain glacier volcano cloud " +
  "clouds storm rain fog mist sunrise dawn dusk moon stars galaxy aurora lightning rainbow shadow " +
  "reflection silhouette macro closeup texture pattern abstract minimal vintage retro analog film " +
  "grain studio office meeting team product launch rocket space satellite telescope laboratory " +
  "science engineering factory machine robot drone camera lens tripod aerial panorama landscape " +
  "architecture interior kitchen bedroom living bathroom stairs tower castle church temple ruins " +
  "museum gallery statue sculpture painting mural graffiti alley neon sign lantern candle fire " +
  "campfire tent camping hiking trail backpack bicycle cycling skate surfing swimming diving " +
  "underwater coral fish whale dolphin turtle bird eagle owl parrot butterfly bee horse cow sheep " +
  "goat farm barn tractor harvest wheat corn vineyard wine cheese bread bakery dessert cake " +
  "chocolate fruit apple orange lemon strawberry vegetable salad soup pasta pizza sushi noodles " +
  "breakfast lunch dinner restaurant cafe bar cocktail beer tea mountaineer summit ridge avalanche"
)
  .split(/\s+/)
  .filter(Boolean);

const wordsLiteral = `ARRAY[${WORDS.map((w) => `'${w}'`).join(",")}]::text[]`;

/** One batch of generated rows for `workspace`, ids lo..hi. The trigger fills search_vector/search_text. */
export function seedSql(): string {
  const pick = "v.w[1 + floor(power(random(), 2) * v.n)::int]";
  // "+ 0 * s.j": the aggregate must reference the subquery's own column, else Postgres treats
  // string_agg (whose arguments would only use outer columns) as an aggregate of the outer query.
  const inner = "v.w[1 + floor(power(random(), 2) * v.n)::int + 0 * s.j]";
  const phrase = (min: number, spread: number) =>
    `(SELECT string_agg(${inner}, ' ') FROM generate_series(1, ${min} + g.i % ${spread}) AS s(j))`;
  return `
    INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, user_description,
                        original_filename, mime_type, format, width, height, bytes, sha256, phash,
                        created_by, created_at, updated_at)
    SELECT gen_random_uuid(), $1::text,
           CASE WHEN g.i % 10 = 0 THEN NULL ELSE ${phrase(2, 3)} END,
           ARRAY(SELECT ${inner} FROM generate_series(1, 1 + g.i % 4) AS s(j)),
           CASE WHEN g.i % 4 = 0 THEN NULL ELSE ${phrase(4, 5)} END
             || CASE WHEN g.i % 8191 = 7 THEN ' zeppelin over the hangar' ELSE '' END,
           CASE WHEN g.i % 3 = 0 THEN NULL ELSE ${phrase(8, 9)} END,
           'IMG_' || lpad(g.i::text, 6, '0') || '_' || ${pick} || '.jpg',
           'image/jpeg', 'jpeg', 640 + g.i % 1000, 480 + g.i % 700, 50000 + (g.i::bigint * 7919) % 2000000,
           encode(sha256(convert_to($1::text || ':' || g.i::text, 'UTF8')), 'hex'),
           (g.i::bigint * 2654435761) % 9223372036854775807,
           'bench-user',
           timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => g.i * 60),
           timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => g.i * 60)
      FROM generate_series($2::int, $3::int) AS g(i),
           (SELECT ${wordsLiteral} AS w, ${WORDS.length} AS n) v`;
}

/**
 * Inserts the corpus in batches of 20,000 rows. The per-row trigger fills search_vector /
 * search_text and the statement trigger the spelling dictionary; the postings of search_terms,
 * the word pairs of search_pairs and the prefix sums of search_prefixes are loaded like a restore
 * does: trigger off and primary key dropped during the load, then one
 * INSERT ... SELECT of the migration's own backfill and the key rebuilt (20M postings at 1M assets:
 * maintaining the btree row by row would dominate the seed time).
 */
export async function seedCorpus(
  tx: SeedTx,
  opts: { assets: number; otherAssets: number; progress?: (msg: string) => void },
): Promise<void> {
  await tx.query("SELECT setseed(0.42)");
  await tx.query('ALTER TABLE assets DISABLE TRIGGER "search_terms_add_inserted"');
  await tx.query('ALTER TABLE search_terms DROP CONSTRAINT "search_terms_pkey"');
  await tx.query('ALTER TABLE assets DISABLE TRIGGER "search_pairs_add_inserted"');
  await tx.query('ALTER TABLE search_pairs DROP CONSTRAINT "search_pairs_pkey"');
  await tx.query('ALTER TABLE assets DISABLE TRIGGER "search_prefixes_add_inserted"');
  await tx.query('ALTER TABLE search_prefixes DROP CONSTRAINT "search_prefixes_pkey"');
  const sql = seedSql();
  const batch = 20_000;
  for (let lo = 1; lo <= opts.assets; lo += batch) {
    await tx.query(sql, [WORKSPACE, lo, Math.min(opts.assets, lo + batch - 1)]);
    if ((lo - 1) % 100_000 === 0) opts.progress?.(`seeded ${lo - 1 + batch} assets`);
  }
  for (let lo = 1; lo <= opts.otherAssets; lo += batch) {
    await tx.query(sql, [OTHER_WORKSPACE, lo, Math.min(opts.otherAssets, lo + batch - 1)]);
  }
  opts.progress?.("assets seeded, loading search_terms");
  await tx.query(`INSERT INTO "search_terms" ("workspace_id", "lexeme", "score", "created_at", "asset_id")
    SELECT a."workspace_id", t.lexeme, t.score, a."created_at", a."id"
      FROM "assets" a, LATERAL "assets_search_terms"(a."search_vector") AS t`);
  opts.progress?.("search_terms loaded, building its primary key");
  await tx.query(
    'ALTER TABLE search_terms ADD CONSTRAINT "search_terms_pkey" PRIMARY KEY ("workspace_id", "lexeme", "score", "created_at", "asset_id")',
  );
  await tx.query('ALTER TABLE assets ENABLE TRIGGER "search_terms_add_inserted"');
  opts.progress?.("loading search_pairs");
  await tx.query(`INSERT INTO "search_pairs" ("workspace_id", "lexeme_a", "lexeme_b", "score", "created_at", "asset_id")
    SELECT a."workspace_id", t.lexeme_a, t.lexeme_b, t.score, a."created_at", a."id"
      FROM "assets" a, LATERAL "assets_search_pairs"(a."search_vector") AS t`);
  opts.progress?.("search_pairs loaded, building its primary key");
  await tx.query(
    'ALTER TABLE search_pairs ADD CONSTRAINT "search_pairs_pkey" PRIMARY KEY ("workspace_id", "lexeme_a", "lexeme_b", "score", "created_at", "asset_id")',
  );
  await tx.query('ALTER TABLE assets ENABLE TRIGGER "search_pairs_add_inserted"');
  opts.progress?.("loading search_prefixes");
  await tx.query(`INSERT INTO "search_prefixes" ("workspace_id", "prefix", "score", "created_at", "asset_id")
    SELECT a."workspace_id", t.prefix, t.score, a."created_at", a."id"
      FROM "assets" a, LATERAL "assets_search_prefixes"(a."search_vector") AS t`);
  await tx.query(
    'ALTER TABLE search_prefixes ADD CONSTRAINT "search_prefixes_pkey" PRIMARY KEY ("workspace_id", "prefix", "score", "created_at", "asset_id")',
  );
  await tx.query('ALTER TABLE assets ENABLE TRIGGER "search_prefixes_add_inserted"');
}

-- Ranked candidates for searches of two words and for phrases: one row per (asset, unordered pair
-- of english lexemes of its search_vector) for the pairs that stand close together and score high,
-- with the score of the two-word query (ts_rank_cd of 'a' & 'b', same weights as
-- src/assets/search.ts). The primary key (a btree), read backwards, returns the best-scoring assets
-- of one pair in ranking order, as search_terms does for one lexeme.
--
-- Which pairs: the lexemes a < b (text order) have occurrences at most 2 positions apart (0, 1 or
-- 2), and the pair's score is at least 0.25. What search.ts proves from that, for an asset holding
-- both lexemes but no row of the pair:
--   * either every cover of a & b spans at least 3 positions, so each cover's weight is divided by
--     at least 3, and the asset scores at most (score of a + score of b) / 3 (search_terms),
--   * or it scores below 0.25.
-- A phrase holds its adjacent words at distance 1, so its asset has the row whenever the pair
-- scores 0.25 or more. The constants are PAIR_DISTANCE and PAIR_MIN_SCORE in search.ts.
-- Never written by the application: kept in sync with assets.search_vector by the statement
-- triggers below, and, like search_terms, trashed assets have no rows.

-- CreateTable
CREATE TABLE "search_pairs" (
    "workspace_id" TEXT NOT NULL,
    "lexeme_a" TEXT NOT NULL,
    "lexeme_b" TEXT NOT NULL,
    "score" REAL NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "asset_id" UUID NOT NULL,

    CONSTRAINT "search_pairs_pkey" PRIMARY KEY ("workspace_id","lexeme_a","lexeme_b","score","created_at","asset_id")
);

-- Hand-written: the pair rows of one vector. Occurrences are joined on position distance only
-- (three offsets, a hash join), never every lexeme with every other.
CREATE FUNCTION "assets_search_pairs"("vector" tsvector)
  RETURNS TABLE ("lexeme_a" TEXT, "lexeme_b" TEXT, "score" REAL) LANGUAGE sql IMMUTABLE AS $$
  WITH o AS (SELECT t.lexeme, p FROM unnest("vector") AS t, unnest(t.positions) AS p)
  SELECT k.a, k.b, r.score
    FROM (SELECT DISTINCT least(x.lexeme, y.lexeme) AS a, greatest(x.lexeme, y.lexeme) AS b
            FROM o x
            JOIN o y ON y.p IN (x.p, x.p + 1, x.p + 2) AND x.lexeme <> y.lexeme) k,
         LATERAL (SELECT ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], "vector",
                    ('''' || replace(replace(k.a, '\', '\\'), '''', '''''') || ''' & ''' ||
                     replace(replace(k.b, '\', '\\'), '''', '''''') || '''')::tsquery) AS score) r
   WHERE r.score >= 0.25
$$;

-- Statement-level triggers with transition tables, live assets only (as search_terms since
-- 20261123030000_asset_lifecycle).
CREATE FUNCTION "search_pairs_add_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "search_pairs" ("workspace_id", "lexeme_a", "lexeme_b", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.lexeme_a, t.lexeme_b, t.score, n."created_at", n."id"
    FROM "new_assets" n, LATERAL "assets_search_pairs"(n."search_vector") AS t
   WHERE n."deleted_at" IS NULL;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_pairs_replace_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_pairs" s
   USING "old_assets" o
    JOIN "new_assets" n ON n."id" = o."id",
         LATERAL "assets_search_pairs"(o."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at", o."deleted_at" IS NULL)
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at", n."deleted_at" IS NULL)
     AND o."deleted_at" IS NULL
     AND s."workspace_id" = o."workspace_id" AND s."lexeme_a" = t.lexeme_a AND s."lexeme_b" = t.lexeme_b
     AND s."score" = t.score AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  INSERT INTO "search_pairs" ("workspace_id", "lexeme_a", "lexeme_b", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.lexeme_a, t.lexeme_b, t.score, n."created_at", n."id"
    FROM "new_assets" n
    JOIN "old_assets" o ON o."id" = n."id",
         LATERAL "assets_search_pairs"(n."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at", o."deleted_at" IS NULL)
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at", n."deleted_at" IS NULL)
     AND n."deleted_at" IS NULL;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_pairs_remove_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_pairs" s
   USING "old_assets" o, LATERAL "assets_search_pairs"(o."search_vector") AS t
   WHERE o."deleted_at" IS NULL
     AND s."workspace_id" = o."workspace_id" AND s."lexeme_a" = t.lexeme_a AND s."lexeme_b" = t.lexeme_b
     AND s."score" = t.score AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  RETURN NULL;
END
$$;

CREATE TRIGGER "search_pairs_add_inserted"
  AFTER INSERT ON "assets"
  REFERENCING NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_pairs_add_inserted"();

CREATE TRIGGER "search_pairs_replace_updated"
  AFTER UPDATE ON "assets"
  REFERENCING OLD TABLE AS "old_assets" NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_pairs_replace_updated"();

CREATE TRIGGER "search_pairs_remove_deleted"
  AFTER DELETE ON "assets"
  REFERENCING OLD TABLE AS "old_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_pairs_remove_deleted"();

-- Backfill: the rows of the live assets that exist already.
INSERT INTO "search_pairs" ("workspace_id", "lexeme_a", "lexeme_b", "score", "created_at", "asset_id")
SELECT a."workspace_id", t.lexeme_a, t.lexeme_b, t.score, a."created_at", a."id"
  FROM "assets" a, LATERAL "assets_search_pairs"(a."search_vector") AS t
 WHERE a."deleted_at" IS NULL;

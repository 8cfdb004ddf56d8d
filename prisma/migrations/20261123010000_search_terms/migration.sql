-- Ranked candidates for full-text search at scale: one row per (asset, english lexeme of its
-- search_vector) with that lexeme's own relevance score (ts_rank_cd of the single-lexeme query,
-- same weights as src/assets/search.ts). Its primary key (a btree) returns the best-scoring assets of one
-- lexeme in ranking order (read backwards: score DESC, created_at DESC) by reading only as many
-- index entries as asked for, so a broad word no longer ranks every matching asset: search.ts takes the
-- top candidates of each query lexeme here and ranks only those exactly. Never written by the
-- application: kept in sync with assets.search_vector by the statement triggers below.

-- CreateTable
CREATE TABLE "search_terms" (
    "workspace_id" TEXT NOT NULL,
    "lexeme" TEXT NOT NULL,
    "score" REAL NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "asset_id" UUID NOT NULL,

    CONSTRAINT "search_terms_pkey" PRIMARY KEY ("workspace_id","lexeme","score","created_at","asset_id")
);

-- Hand-written: the postings of one asset. The score of a lexeme is ts_rank_cd of the query made
-- of that lexeme alone, with the weights of search.ts ({D, C, B, A} = {0.1, 0.2, 0.4, 1.0}); the
-- lexeme is quoted for tsquery input ('' and \ escapes).
CREATE FUNCTION "assets_search_terms"("vector" tsvector)
  RETURNS TABLE ("lexeme" TEXT, "score" REAL) LANGUAGE sql IMMUTABLE AS $$
  SELECT t.lexeme, ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], "vector", ('''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''')::tsquery)
    FROM unnest("vector") AS t
$$;

-- Statement-level triggers with transition tables (set-based bulk loads), as for search_words.
-- An update deletes the old postings by their full key (recomputed from the old vector, so no
-- second index is needed) and inserts the new ones; only rows whose vector changed are touched.
CREATE FUNCTION "search_terms_add_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "search_terms" ("workspace_id", "lexeme", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.lexeme, t.score, n."created_at", n."id"
    FROM "new_assets" n, LATERAL "assets_search_terms"(n."search_vector") AS t;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_terms_replace_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_terms" s
   USING "old_assets" o
    JOIN "new_assets" n ON n."id" = o."id",
         LATERAL "assets_search_terms"(o."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at")
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at")
     AND s."workspace_id" = o."workspace_id" AND s."lexeme" = t.lexeme AND s."score" = t.score
     AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  INSERT INTO "search_terms" ("workspace_id", "lexeme", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.lexeme, t.score, n."created_at", n."id"
    FROM "new_assets" n
    JOIN "old_assets" o ON o."id" = n."id",
         LATERAL "assets_search_terms"(n."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at")
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at");
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_terms_remove_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_terms" s
   USING "old_assets" o, LATERAL "assets_search_terms"(o."search_vector") AS t
   WHERE s."workspace_id" = o."workspace_id" AND s."lexeme" = t.lexeme AND s."score" = t.score
     AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  RETURN NULL;
END
$$;

CREATE TRIGGER "search_terms_add_inserted"
  AFTER INSERT ON "assets"
  REFERENCING NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_terms_add_inserted"();

CREATE TRIGGER "search_terms_replace_updated"
  AFTER UPDATE ON "assets"
  REFERENCING OLD TABLE AS "old_assets" NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_terms_replace_updated"();

CREATE TRIGGER "search_terms_remove_deleted"
  AFTER DELETE ON "assets"
  REFERENCING OLD TABLE AS "old_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_terms_remove_deleted"();

-- Backfill: the postings of the assets that exist already.
INSERT INTO "search_terms" ("workspace_id", "lexeme", "score", "created_at", "asset_id")
SELECT a."workspace_id", t.lexeme, t.score, a."created_at", a."id"
  FROM "assets" a, LATERAL "assets_search_terms"(a."search_vector") AS t;

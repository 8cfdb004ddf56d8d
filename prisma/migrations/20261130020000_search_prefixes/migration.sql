-- Ranked candidates for a one-word prefix search ("sun" finds sunset and sunrise): one row per
-- (asset, first three letters of its english lexemes) with the sum of the own scores of its
-- lexemes that start with them (search_terms' scores), when that sum is at least 0.25. The sum is
-- the score of the query 'abc':* (a disjunction: each occurrence is a cover of its own), and at
-- least the score of any longer prefix that starts with the three letters. The primary key, read
-- backwards, returns the assets in ranking order, as search_terms does for one lexeme; an asset
-- without a row scores below 0.25 (PREFIX_MIN_SCORE in search.ts). Never written by the
-- application: kept in sync with assets.search_vector by the statement triggers below, and, like
-- search_terms, trashed assets have no rows.

-- CreateTable
CREATE TABLE "search_prefixes" (
    "workspace_id" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "score" REAL NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "asset_id" UUID NOT NULL,

    CONSTRAINT "search_prefixes_pkey" PRIMARY KEY ("workspace_id","prefix","score","created_at","asset_id")
);

-- Hand-written: the prefix rows of one vector, from its search_terms postings.
CREATE FUNCTION "assets_search_prefixes"("vector" tsvector)
  RETURNS TABLE ("prefix" TEXT, "score" REAL) LANGUAGE sql IMMUTABLE AS $$
  SELECT left(t.lexeme, 3), sum(t.score)::real
    FROM "assets_search_terms"("vector") AS t
   WHERE length(t.lexeme) >= 3
   GROUP BY 1
  HAVING sum(t.score) >= 0.25
$$;

-- Statement-level triggers with transition tables, live assets only (as search_terms since
-- 20261123030000_asset_lifecycle).
CREATE FUNCTION "search_prefixes_add_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "search_prefixes" ("workspace_id", "prefix", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.prefix, t.score, n."created_at", n."id"
    FROM "new_assets" n, LATERAL "assets_search_prefixes"(n."search_vector") AS t
   WHERE n."deleted_at" IS NULL;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_prefixes_replace_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_prefixes" s
   USING "old_assets" o
    JOIN "new_assets" n ON n."id" = o."id",
         LATERAL "assets_search_prefixes"(o."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at", o."deleted_at" IS NULL)
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at", n."deleted_at" IS NULL)
     AND o."deleted_at" IS NULL
     AND s."workspace_id" = o."workspace_id" AND s."prefix" = t.prefix
     AND s."score" = t.score AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  INSERT INTO "search_prefixes" ("workspace_id", "prefix", "score", "created_at", "asset_id")
  SELECT n."workspace_id", t.prefix, t.score, n."created_at", n."id"
    FROM "new_assets" n
    JOIN "old_assets" o ON o."id" = n."id",
         LATERAL "assets_search_prefixes"(n."search_vector") AS t
   WHERE (o."search_vector", o."workspace_id", o."created_at", o."deleted_at" IS NULL)
         IS DISTINCT FROM (n."search_vector", n."workspace_id", n."created_at", n."deleted_at" IS NULL)
     AND n."deleted_at" IS NULL;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_prefixes_remove_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "search_prefixes" s
   USING "old_assets" o, LATERAL "assets_search_prefixes"(o."search_vector") AS t
   WHERE o."deleted_at" IS NULL
     AND s."workspace_id" = o."workspace_id" AND s."prefix" = t.prefix
     AND s."score" = t.score AND s."created_at" = o."created_at" AND s."asset_id" = o."id";
  RETURN NULL;
END
$$;

CREATE TRIGGER "search_prefixes_add_inserted"
  AFTER INSERT ON "assets"
  REFERENCING NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_prefixes_add_inserted"();

CREATE TRIGGER "search_prefixes_replace_updated"
  AFTER UPDATE ON "assets"
  REFERENCING OLD TABLE AS "old_assets" NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_prefixes_replace_updated"();

CREATE TRIGGER "search_prefixes_remove_deleted"
  AFTER DELETE ON "assets"
  REFERENCING OLD TABLE AS "old_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_prefixes_remove_deleted"();

-- Backfill: the rows of the live assets that exist already.
INSERT INTO "search_prefixes" ("workspace_id", "prefix", "score", "created_at", "asset_id")
SELECT a."workspace_id", t.prefix, t.score, a."created_at", a."id"
  FROM "assets" a, LATERAL "assets_search_prefixes"(a."search_vector") AS t
 WHERE a."deleted_at" IS NULL;

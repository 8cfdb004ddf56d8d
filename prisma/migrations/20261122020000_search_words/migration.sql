-- Spelling dictionary for the typo fallback of full-text search (pg_trgm's recommended way to
-- suggest corrections: a trigram index over the distinct words of the documents, not over the
-- documents themselves). One row per (workspace, word).

-- CreateTable
CREATE TABLE "search_words" (
    "workspace_id" TEXT NOT NULL,
    "word" TEXT NOT NULL,

    CONSTRAINT "search_words_pkey" PRIMARY KEY ("workspace_id","word")
);

-- CreateIndex
CREATE INDEX "search_words_word_idx" ON "search_words" USING GIN ("word" gin_trgm_ops);

-- Hand-written (Prisma cannot express it): the words of one asset. Same text as search_vector
-- (title, tags, caption, description, filename with `._-` split to words), tokenised with the
-- 'simple' configuration (lower-cased, unstemmed, stop words kept), keeping words of 3-64
-- characters without digits or punctuation: the only ones a trigram match can correct.
-- src/assets/search.ts applies the same filter (SEARCH_WORD_PATTERN) to the words of a query.
CREATE FUNCTION "assets_search_words"("title" TEXT, "tags" TEXT[], "caption" TEXT, "description" TEXT, "filename" TEXT)
  RETURNS SETOF TEXT LANGUAGE sql STABLE AS $$
  SELECT t.lexeme
    FROM unnest(to_tsvector('simple', concat_ws(' ', "title", array_to_string("tags", ' '), "caption", "description",
                                                 regexp_replace(coalesce("filename", ''), '[._-]+', ' ', 'g')))) AS t
   WHERE t.lexeme ~ '^[^[:digit:][:punct:][:space:]]{3,64}$'
$$;

-- Statement-level triggers with transition tables: one INSERT per statement, so bulk loads stay
-- set-based. Append-only: words of updated or deleted assets are never removed (a stale word
-- only costs the fallback a wasted candidate). Sorted inserts, so that two transactions adding
-- the same new words wait for each other instead of deadlocking.
CREATE FUNCTION "search_words_add_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "search_words" ("workspace_id", "word")
  SELECT DISTINCT n."workspace_id", w.word
    FROM "new_assets" n,
         LATERAL "assets_search_words"(n."user_title", n."user_tags", n."user_caption", n."user_description", n."original_filename") AS w(word)
   ORDER BY 1, 2
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE FUNCTION "search_words_add_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "search_words" ("workspace_id", "word")
  SELECT DISTINCT n."workspace_id", w.word
    FROM "new_assets" n
    JOIN "old_assets" o ON o."id" = n."id",
         LATERAL "assets_search_words"(n."user_title", n."user_tags", n."user_caption", n."user_description", n."original_filename") AS w(word)
   WHERE (n."workspace_id", n."user_title", n."user_tags", n."user_caption", n."user_description", n."original_filename")
         IS DISTINCT FROM (o."workspace_id", o."user_title", o."user_tags", o."user_caption", o."user_description", o."original_filename")
   ORDER BY 1, 2
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER "search_words_add_inserted"
  AFTER INSERT ON "assets"
  REFERENCING NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_words_add_inserted"();

-- (Transition tables cannot be combined with an `UPDATE OF <columns>` list: the WHERE above
-- skips rows whose text did not change.)
CREATE TRIGGER "search_words_add_updated"
  AFTER UPDATE ON "assets"
  REFERENCING OLD TABLE AS "old_assets" NEW TABLE AS "new_assets"
  FOR EACH STATEMENT EXECUTE FUNCTION "search_words_add_updated"();

-- Backfill: the words of the assets that exist already.
INSERT INTO "search_words" ("workspace_id", "word")
SELECT DISTINCT a."workspace_id", w.word
  FROM "assets" a,
       LATERAL "assets_search_words"(a."user_title", a."user_tags", a."user_caption", a."user_description", a."original_filename") AS w(word)
ON CONFLICT DO NOTHING;

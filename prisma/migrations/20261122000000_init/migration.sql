-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- Hand-written (Prisma cannot express it): trigram matching for the typo fallback of full-text search.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- CreateTable
CREATE TABLE "collections" (
    "id" UUID NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "collections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "assets" (
    "id" UUID NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "collection_id" UUID,
    "user_title" TEXT,
    "user_tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "user_caption" TEXT,
    "user_description" TEXT,
    "original_filename" TEXT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "format" TEXT NOT NULL,
    "width" INTEGER NOT NULL,
    "height" INTEGER NOT NULL,
    "bytes" BIGINT NOT NULL,
    "sha256" CHAR(64) NOT NULL,
    "phash" BIGINT NOT NULL,
    "created_by" TEXT,
    "search_vector" tsvector,
    "search_text" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "assets_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "collections_workspace_id_name_key" ON "collections"("workspace_id", "name");

-- CreateIndex
CREATE INDEX "assets_workspace_id_created_at_id_idx" ON "assets"("workspace_id", "created_at" DESC, "id");

-- CreateIndex
CREATE INDEX "assets_workspace_id_collection_id_idx" ON "assets"("workspace_id", "collection_id");

-- CreateIndex
CREATE INDEX "assets_workspace_id_sha256_idx" ON "assets"("workspace_id", "sha256");

-- CreateIndex
CREATE INDEX "assets_search_vector_idx" ON "assets" USING GIN ("search_vector");

-- CreateIndex
CREATE INDEX "assets_search_text_idx" ON "assets" USING GIN ("search_text" gin_trgm_ops);

-- AddForeignKey
ALTER TABLE "assets" ADD CONSTRAINT "assets_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Hand-written (Prisma cannot express it): keep search_vector / search_text in sync with the
-- user metadata. A trigger, not a generated column, because array_to_string is only STABLE.
-- Weights: title A, tags B, caption + description C, original filename D (english config).
CREATE FUNCTION "assets_search_refresh"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."search_vector" :=
      setweight(to_tsvector('english', coalesce(NEW."user_title", '')), 'A')
   || setweight(to_tsvector('english', coalesce(array_to_string(NEW."user_tags", ' '), '')), 'B')
   || setweight(to_tsvector('english', coalesce(NEW."user_caption", '') || ' ' || coalesce(NEW."user_description", '')), 'C')
   || setweight(to_tsvector('english', regexp_replace(coalesce(NEW."original_filename", ''), '[._-]+', ' ', 'g')), 'D');
  NEW."search_text" := lower(concat_ws(' ',
      NEW."user_title",
      array_to_string(NEW."user_tags", ' '),
      NEW."user_caption",
      NEW."user_description",
      NEW."original_filename"));
  RETURN NEW;
END
$$;

CREATE TRIGGER "assets_search_refresh"
  BEFORE INSERT OR UPDATE OF "user_title", "user_tags", "user_caption", "user_description", "original_filename"
  ON "assets"
  FOR EACH ROW EXECUTE FUNCTION "assets_search_refresh"();

-- The list's capped count (issue 7: GET /v1/assets counts up to LIST_EXACT_COUNT_LIMIT + 1 live
-- assets of a workspace): an index-only scan of this partial index instead of reading each row to
-- test deleted_at (1.5 ms instead of 5.5 ms for 10,001 rows at 1M assets).
-- Hand-written: Prisma's schema does not model partial indexes.
CREATE INDEX "assets_live_workspace_id_idx" ON "assets" ("workspace_id") WHERE "deleted_at" IS NULL;

-- Total duration of an animated original (sum of its frame delays, milliseconds), read at upload
-- beside the frame count (`pages`). Null for a still image, and on older rows until
-- `pnpm run backfill:metadata` fills it.

-- AlterTable
ALTER TABLE "assets" ADD COLUMN     "duration_ms" INTEGER;

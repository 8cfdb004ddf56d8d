/**
 * pnpm run backfill:metadata [--batch-size <n>] [--json]
 *
 * Fills placeholder, dominant colour, alpha, frames and EXIF for assets uploaded before the
 * asset_metadata migration (every workspace), reading each original from the blob store, and sets
 * width/height as displayed (after the EXIF orientation) on rows stored with the un-oriented size. Safe to
 * run again and while the service runs: rows that already have metadata are left alone. Uses the
 * management configuration (DATABASE_URL or the embedded PGlite, storage, LIMIT_INPUT_PIXELS,
 * KEEP_GPS); applies pending migrations first, so it also works right after an upgrade. Then
 * removes from every stored original (current, trashed, kept versions) the metadata that
 * ORIGINAL_METADATA and KEEP_GPS say must not be stored (GPS, serial numbers), losslessly. Exit
 * code 1 when some asset could not be filled or cleaned (listed).
 */
import { parseArgs } from "node:util";
import { createBlobStore } from "@media-platform/storage";
import { backfillMetadata, backfillPrivacy } from "../assets/backfill";
import { loadConfig } from "../config";
import { openDatabase } from "../db/client";
import { migrate } from "../db/migrate";

const USAGE = "usage: pnpm run backfill:metadata [--batch-size <n> (default 100)] [--json]";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { "batch-size": { type: "string", default: "100" }, json: { type: "boolean", default: false } },
  });
  const batchSize = Number(values["batch-size"]);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new Error(`--batch-size must be an integer from 1 to 10000\n${USAGE}`);
  }
  const config = loadConfig(process.env);
  const db = await openDatabase(
    config.databaseUrl ? { databaseUrl: config.databaseUrl } : { pgliteDir: config.pgliteDir },
  );
  try {
    await migrate(await db.migrationConnection());
    const summary = await backfillMetadata(db.prisma, createBlobStore(config.storage), {
      batchSize,
      limitInputPixels: config.limitInputPixels,
      keepGps: config.keepGps,
      onBatch: values.json
        ? undefined
        : (s) => process.stderr.write(`filled ${s.filled}, reoriented ${s.reoriented}, failed ${s.failed}\n`),
    });
    if (!values.json) {
      for (const f of summary.failures) process.stdout.write(`failed ${f.assetId}: ${f.reason}\n`);
      process.stdout.write(
        `${summary.filled} asset(s) filled, ${summary.reoriented} reoriented, ${summary.failed} failed\n`,
      );
    }
    const privacy = await backfillPrivacy(db.prisma, createBlobStore(config.storage), {
      batchSize,
      policy: config.originalMetadata,
      keepGps: config.keepGps,
    });
    if (values.json) process.stdout.write(`${JSON.stringify({ ...summary, privacy })}\n`);
    else {
      for (const f of privacy.failures) process.stdout.write(`failed ${f.key}: ${f.reason}\n`);
      process.stdout.write(`${privacy.cleaned} original(s) cleaned of private metadata, ${privacy.failed} failed\n`);
    }
    if (summary.failed > 0 || privacy.failed > 0) process.exitCode = 1;
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`backfill:metadata: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});

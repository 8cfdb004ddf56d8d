/** pnpm db:migrate: applies pending prisma/migrations to DATABASE_URL (or the embedded PGlite). */
import { loadConfig } from "../config";
import { openDatabase } from "../db/client";
import { migrate } from "../db/migrate";

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const db = await openDatabase(
    config.databaseUrl ? { databaseUrl: config.databaseUrl } : { pgliteDir: config.pgliteDir },
  );
  try {
    const result = await migrate(await db.migrationConnection());
    for (const name of result.applied) process.stdout.write(`applied ${name}\n`);
    process.stdout.write(
      result.applied.length === 0
        ? `database is up to date (${result.alreadyApplied.length} migrations)\n`
        : `${result.applied.length} migration(s) applied\n`,
    );
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`db:migrate: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});

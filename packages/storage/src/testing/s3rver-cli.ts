/**
 * Starts an s3rver for CI/dev and prints its settings as KEY=VALUE lines, then stays
 * up until SIGINT/SIGTERM:  pnpm exec tsx packages/storage/src/testing/s3rver-cli.ts
 * Optional: S3RVER_BUCKET to choose the bucket name.
 */
import { startS3rver } from "./s3rver";

async function main(): Promise<void> {
  const s3 = await startS3rver({
    bucket: process.env.S3RVER_BUCKET || undefined,
  });
  for (const [key, value] of Object.entries(s3.env)) process.stdout.write(`${key}=${value}\n`);
  const shutdown = (): void => {
    s3.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`s3rver failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

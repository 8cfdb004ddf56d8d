/**
 * pnpm run import <folder> --workspace <id> [--collection <name>] [--url http://localhost:3000]
 * pnpm run import --from-urls <file> --workspace <id> [...]
 *
 * Uploads every file of a folder (not hidden files, not sub-folders) through the management API
 * with warnAboutDuplicateImages, optionally into a collection (created when missing), showing a
 * progress line on a terminal, then prints a summary: uploaded, duplicates (exact / similar) and
 * rejected files with the API's reason. The server decides what is an image (it sniffs bytes),
 * so a .txt file is sent too and comes back as a 415. With --from-urls, each line of the file (blank
 * lines and `#` comments aside) is a URL the service imports itself (POST /v1/assets/import).
 *
 * The token is signed like `pnpm run token` does (AUTH_JWT_SECRET, or the embedded secret in DATA_DIR);
 * with an identity provider (AUTH_JWKS_URL / AUTH_PUBLIC_KEY) pass --token or MEDIA_PLATFORM_TOKEN.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { ApiError, MediaPlatformClient, type CollectionDto, type DuplicateMatch } from "@media-platform/client";
import { embeddedSecret, signToken } from "../auth/keys";
import { loadConfig } from "../config";

export const USAGE = `usage: pnpm run import <folder> --workspace <id> [--collection <name>] [--url <management URL>]
       [--token <bearer token>] [--concurrency <n>] [--json]
       pnpm run import --from-urls <file> --workspace <id> [the same options]

  --workspace, -w    workspace to import into (signs a token like pnpm run token)
  --collection, -c   put the assets into this collection (created when missing)
  --url, -u          management API base URL (default http://localhost:<MANAGEMENT_PORT or 3000>)
  --token, -t        use this bearer token instead of signing one (or MEDIA_PLATFORM_TOKEN)
  --from-urls        import the URLs listed in this file (one a line; the service fetches each)
  --concurrency      parallel uploads (default 1: duplicates within the folder are always detected)
  --json             print the summary as JSON`;

export interface ImportedFile {
  file: string;
  assetId: string;
  duplicates: DuplicateMatch[];
}

export interface RejectedFile {
  file: string;
  status: number;
  title: string;
  reason: string;
}

export interface ImportSummary {
  folder: string;
  collection: { id: string; name: string; created: boolean } | null;
  total: number;
  uploaded: ImportedFile[];
  /** Uploaded files the API reported as duplicates (exact when any match is exact, else similar). */
  duplicates: { exact: ImportedFile[]; similar: ImportedFile[] };
  rejected: RejectedFile[];
}

export interface ImportOptions {
  folder: string;
  /** A file of URLs (one a line) to import instead of the folder's files; `folder` is then unused. */
  urlsFile?: string;
  client: MediaPlatformClient;
  collection?: string;
  concurrency?: number;
  /** Called after each file (for the progress line). */
  onProgress?: (done: number, total: number, file: string) => void;
}

/** Statuses that would fail every other file too: stop instead of reporting each one. */
const FATAL = new Set([401, 403]);

export class ImportAbortedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImportAbortedError";
  }
}

/** Regular, non-hidden files of the folder, sorted by name (so runs are reproducible). */
export function listImportFiles(folder: string): string[] {
  const entries = fs.readdirSync(folder, { withFileTypes: true });
  return entries
    .filter(
      (e) =>
        !e.name.startsWith(".") &&
        (e.isFile() || (e.isSymbolicLink() && fs.statSync(path.join(folder, e.name)).isFile())),
    )
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function ensureCollection(
  client: MediaPlatformClient,
  name: string,
): Promise<{ collection: CollectionDto; created: boolean }> {
  try {
    return { collection: await client.createCollection(name), created: true };
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 409) throw err;
    const existing = await client.findCollectionByName(name.trim());
    if (!existing)
      throw new ImportAbortedError(`collection ${JSON.stringify(name)} exists (409) but was not found in the list`);
    return { collection: existing, created: false };
  }
}

function messageOf(value: unknown): string | undefined {
  // Not `instanceof Error`: fetch's errors may come from another realm (e.g. under jest).
  if (typeof value === "object" && value !== null && typeof (value as { message?: unknown }).message === "string") {
    return (value as { message: string }).message;
  }
  return undefined;
}

/** "fetch failed (connect ECONNREFUSED 127.0.0.1:9)" */
function describeFailure(err: unknown): string {
  const message = messageOf(err) ?? String(err);
  const cause = messageOf((err as { cause?: unknown } | null)?.cause);
  return cause ? `${message} (${cause})` : message;
}

/** The URLs of a --from-urls file: one a line, blank lines and `#` comments skipped. */
export function listImportUrls(file: string): string[] {
  return fs
    .readFileSync(file, "utf8")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Uploads the folder (or imports the URLs); never throws for a rejected file, only when the import cannot go on. */
export async function runImport(options: ImportOptions): Promise<ImportSummary> {
  const folder = path.resolve(options.urlsFile ?? options.folder);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(folder);
  } catch {
    throw new ImportAbortedError(`${options.urlsFile ? "file" : "folder"} not found: ${folder}`);
  }
  if (options.urlsFile ? !stat.isFile() : !stat.isDirectory())
    throw new ImportAbortedError(`not a ${options.urlsFile ? "file" : "folder"}: ${folder}`);
  const files = options.urlsFile ? listImportUrls(folder) : listImportFiles(folder);
  const { client } = options;

  let collection: ImportSummary["collection"] = null;
  if (options.collection !== undefined) {
    try {
      const { collection: c, created } = await ensureCollection(client, options.collection);
      collection = { id: c.id, name: c.name, created };
    } catch (err) {
      if (err instanceof ApiError)
        throw new ImportAbortedError(
          `cannot create collection: ${err.status} ${err.problem.title}: ${err.problem.detail ?? ""}`.trim(),
        );
      if (err instanceof ImportAbortedError) throw err;
      throw new ImportAbortedError(`cannot reach the management API at ${client.baseUrl}: ${describeFailure(err)}`);
    }
  }

  const uploaded: (ImportedFile | undefined)[] = new Array(files.length);
  const rejected: (RejectedFile | undefined)[] = new Array(files.length);
  let next = 0;
  let done = 0;
  let aborted: ImportAbortedError | undefined;

  const worker = async () => {
    while (!aborted && next < files.length) {
      const index = next++;
      const file = files[index]!;
      try {
        const asset = options.urlsFile
          ? await client.importFromUrl({ url: file, collectionId: collection?.id })
          : await client.uploadAsset({
              file: path.join(folder, file),
              collectionId: collection?.id,
              warnAboutDuplicateImages: true,
            });
        uploaded[index] = { file, assetId: asset.id, duplicates: asset.duplicates ?? [] };
      } catch (err) {
        if (err instanceof ApiError && !FATAL.has(err.status)) {
          rejected[index] = {
            file,
            status: err.status,
            title: err.problem.title,
            reason: err.problem.detail ?? err.problem.title,
          };
        } else if (err instanceof ApiError) {
          aborted = new ImportAbortedError(`${err.status} ${err.problem.title}: ${err.problem.detail ?? ""}`.trim());
        } else {
          aborted = new ImportAbortedError(`upload of ${file} failed: ${describeFailure(err)}`);
        }
      }
      done++;
      options.onProgress?.(done, files.length, file);
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 1, 16));
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(files.length, 1)) }, worker));
  if (aborted) throw aborted;

  const ok = uploaded.filter((u): u is ImportedFile => u !== undefined);
  return {
    folder,
    collection,
    total: files.length,
    uploaded: ok,
    duplicates: {
      exact: ok.filter((u) => u.duplicates.some((d) => d.match === "exact")),
      similar: ok.filter((u) => u.duplicates.length > 0 && !u.duplicates.some((d) => d.match === "exact")),
    },
    rejected: rejected.filter((r): r is RejectedFile => r !== undefined),
  };
}

export function formatSummary(s: ImportSummary): string {
  const lines: string[] = [];
  const into = s.collection
    ? ` into collection "${s.collection.name}" (${s.collection.id}${s.collection.created ? ", created" : ""})`
    : "";
  lines.push(`Imported ${s.folder}${into}: ${s.total} file${s.total === 1 ? "" : "s"}`);
  lines.push(`  uploaded:   ${s.uploaded.length}`);
  const dupCount = s.duplicates.exact.length + s.duplicates.similar.length;
  lines.push(`  duplicates: ${dupCount} (exact ${s.duplicates.exact.length}, similar ${s.duplicates.similar.length})`);
  for (const [kind, list] of [
    ["exact", s.duplicates.exact],
    ["similar", s.duplicates.similar],
  ] as const) {
    for (const u of list) {
      const matches = u.duplicates
        .filter((d) => kind === "similar" || d.match === "exact")
        .map((d) => `${d.assetId}${d.match === "similar" ? ` (distance ${d.distance})` : ""}`);
      lines.push(`    ${u.file}: ${kind} duplicate of ${matches.join(", ")}`);
    }
  }
  lines.push(`  rejected:   ${s.rejected.length}`);
  for (const r of s.rejected) lines.push(`    ${r.file}: ${r.status} ${r.title}: ${r.reason}`);
  return `${lines.join("\n")}\n`;
}

/** One line, redrawn in place: `[#####.....] 5/10 file.jpg`. */
export function progressLine(done: number, total: number, file: string, width = 24): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  const name = file.length > 40 ? `…${file.slice(-39)}` : file;
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} ${name}`;
}

export interface CliIo {
  argv: string[];
  env: Record<string, string | undefined>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** The command; returns the exit code: 0 all uploaded, 1 some rejected or import failed, 2 usage error. */
export async function main(io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: io.argv.filter((a) => a !== "--"),
      allowPositionals: true,
      strict: true,
      options: {
        workspace: { type: "string", short: "w" },
        collection: { type: "string", short: "c" },
        url: { type: "string", short: "u" },
        token: { type: "string", short: "t" },
        concurrency: { type: "string" },
        "from-urls": { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    io.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const urlsFile = values["from-urls"];
  if (positionals.length !== (urlsFile === undefined ? 1 : 0)) {
    io.stderr.write(
      `${urlsFile === undefined ? "expected exactly one folder" : "--from-urls takes no folder"}, got ${positionals.length}\n${USAGE}\n`,
    );
    return 2;
  }
  const concurrency = values.concurrency === undefined ? 1 : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 16) {
    io.stderr.write("--concurrency must be a whole number from 1 to 16\n");
    return 2;
  }
  if (values.collection !== undefined && values.collection.trim() === "") {
    io.stderr.write("--collection must not be empty\n");
    return 2;
  }

  let token = values.token ?? io.env.MEDIA_PLATFORM_TOKEN;
  let config;
  try {
    config = loadConfig(io.env);
  } catch (err) {
    io.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  if (!token) {
    if (!values.workspace) {
      io.stderr.write(`--workspace is required (or --token)\n${USAGE}\n`);
      return 2;
    }
    if (config.auth.jwksUrl || config.auth.publicKey) {
      io.stderr.write(
        "AUTH_JWKS_URL / AUTH_PUBLIC_KEY is set: get a token from your identity provider and pass --token\n",
      );
      return 1;
    }
    // Same secret and claims as `pnpm run token`.
    const secret = config.auth.jwtSecret ?? embeddedSecret(config.dataDir)!;
    token = signToken(secret, {
      workspaceId: values.workspace,
      sub: "pnpm-import",
      ttl: "1h",
      workspaceClaim: config.auth.workspaceClaim,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
    });
  }
  const baseUrl = values.url ?? `http://localhost:${config.port || 3000}`;
  let client: MediaPlatformClient;
  try {
    client = new MediaPlatformClient({ baseUrl, token });
  } catch (err) {
    io.stderr.write(`--url: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }

  const tty = io.stderr.isTTY === true && !values.json;
  try {
    const summary = await runImport({
      folder: positionals[0] ?? "",
      urlsFile,
      client,
      collection: values.collection,
      concurrency,
      onProgress: tty
        ? (done, total, file) => io.stderr.write(`\r\x1b[2K${progressLine(done, total, file)}`)
        : undefined,
    });
    if (tty) io.stderr.write("\r\x1b[2K");
    io.stdout.write(values.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
    return summary.rejected.length === 0 ? 0 : 1;
  } catch (err) {
    if (tty) io.stderr.write("\r\x1b[2K");
    io.stderr.write(`import: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (require.main === module) {
  main({ argv: process.argv.slice(2), env: process.env, stdout: process.stdout, stderr: process.stderr }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`import: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

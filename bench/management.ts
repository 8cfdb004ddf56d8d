/**
 * Management benchmarks, each next to a reference measured in the same run (only ratios are meant
 * to be compared between machines):
 *  - Upload rate: N distinct small JPEGs through POST /v1/assets/upload (HTTP + multipart + DB row
 *    + blob), next to the same per-image work done in-process without HTTP or database (sharp
 *    metadata, full decode via the perceptual hash, sha256, blob write with the same blob store).
 *  - Search latency at 100k assets: full-text and list queries over HTTP, next to the same SQL run
 *    directly on a database connection; EXPLAIN (ANALYZE) shows which index each query uses.
 *
 * Postgres when BENCH_DATABASE_URL or DATABASE_URL is set (a fresh database is created and dropped),
 * else PGlite persisted in a temp folder.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import jwt from "jsonwebtoken";
import pg from "pg";
import sharp from "sharp";
import phash from "sharp-phash";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { createPGlite, openDatabase } from "../services/management/src/db/client";
import { migrate } from "../services/management/src/db/migrate";
import {
  parseQuery,
  SEARCH_WORD_PATTERN,
  SUGGESTIONS_PER_WORD,
  TRIGRAM_THRESHOLD,
} from "../services/management/src/assets/search";
import { freePort, median, startProcess, table } from "./harness";

const ROOT = path.resolve(__dirname, "..");
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 200);
const UPLOAD_CONCURRENCY = 4;
const ASSETS = Number(process.env.BENCH_ASSETS ?? 100_000);
const OTHER_ASSETS = Math.max(1, Math.round(ASSETS / 20));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const LOAD_CONNECTIONS = 10;
const SECRET = "bench-secret-0123456789abcdef";
const WORKSPACE = "bench-workspace";
const OTHER_WORKSPACE = "bench-other-workspace";
const LIMIT = 25;
/** Same as search.ts: ts_rank_cd weights {D, C, B, A}. */
const WEIGHTS = "{0.1,0.2,0.4,1.0}";
const LIMIT_INPUT_PIXELS = 100_000_000;

const progress = (msg: string): void => {
  process.stderr.write(`[bench management] ${msg}\n`);
};

const adminUrl = (): string | undefined => process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || undefined;

// ---------------------------------------------------------------------------------------------
// Small helpers

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

const ms = (v: number): string => (v >= 100 ? `${v.toFixed(0)} ms` : `${v.toFixed(1)} ms`);
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;

async function clock<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now();
  const value = await fn();
  return [performance.now() - start, value];
}

/** Runs `fn` over `items` with at most `concurrency` in flight; returns each item's latency. */
async function runPool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = new Array<number>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      latencies[i] = (await clock(() => fn(items[i]!)))[0];
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return latencies;
}

/** Sequential samples after a short warm-up. */
async function sample(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await clock(fn))[0]);
  return out;
}

/** Calls `fn` from `connections` loops for `seconds`; operations per second. */
async function closedLoopRate(seconds: number, connections: number, fn: () => Promise<unknown>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        await fn();
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

const token = (workspaceId: string): string =>
  jwt.sign({ workspace_id: workspaceId }, SECRET, { algorithm: "HS256", expiresIn: "2h" });

// ---------------------------------------------------------------------------------------------
// Database: a fresh Postgres database or a PGlite folder, migrated by the service's own runner

interface Tx {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

interface RawDb extends Tx {
  kind: "postgres" | "pglite";
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

interface BenchDatabase {
  kind: "postgres" | "pglite";
  /** Environment for the service process. */
  env: Record<string, string>;
  /** Opens a raw connection (a pool of 10 on Postgres, the same size as the service's). */
  open(): Promise<RawDb>;
  drop(): Promise<void>;
}

async function createBenchDatabase(label: string, dataDir: string): Promise<BenchDatabase> {
  const admin = adminUrl();
  if (admin) {
    const name = `bench_${label}_${process.pid}_${Date.now()}`;
    const adminClient = new pg.Client({ connectionString: admin });
    await adminClient.connect();
    await adminClient.query(`CREATE DATABASE "${name}"`);
    await adminClient.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const databaseUrl = url.toString();
    const db = await openDatabase({ databaseUrl });
    try {
      await migrate(await db.migrationConnection());
    } finally {
      await db.close();
    }
    return {
      kind: "postgres",
      env: { DATABASE_URL: databaseUrl },
      async open() {
        const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
        pool.on("error", () => undefined);
        return {
          kind: "postgres",
          query: async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[],
          async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
            const client = await pool.connect();
            try {
              await client.query("BEGIN");
              const result = await fn({
                query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
              });
              await client.query("COMMIT");
              return result;
            } catch (err) {
              await client.query("ROLLBACK").catch(() => undefined);
              throw err;
            } finally {
              client.release();
            }
          },
          close: () => pool.end(),
        };
      },
      async drop() {
        const c = new pg.Client({ connectionString: admin });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const pgliteDir = path.join(dataDir, "pg");
  const open = async (): Promise<RawDb> => {
    const pglite = await createPGlite(pgliteDir);
    return {
      kind: "pglite",
      query: async <T>(sql: string, params: unknown[] = []) => (await pglite.query<T>(sql, params)).rows,
      transaction: <T>(fn: (tx: Tx) => Promise<T>) =>
        pglite.transaction((tx) =>
          fn({ query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows }),
        ),
      close: () => pglite.close(),
    };
  };
  const pglite = await createPGlite(pgliteDir);
  const db = await openDatabase({ pglite });
  try {
    await migrate(await db.migrationConnection());
  } finally {
    await db.close();
    await pglite.close();
  }
  return { kind: "pglite", env: { DATABASE_URL: "", PGLITE_DIR: pgliteDir }, open, drop: async () => undefined };
}

async function startService(dataDir: string, db: BenchDatabase): Promise<{ base: string; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = await startProcess(
    "services/management/src/index.ts",
    {
      MANAGEMENT_PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: path.join(dataDir, "blobs"),
      AUTH_JWT_SECRET: SECRET,
      AUTH_JWKS_URL: "",
      AUTH_PUBLIC_KEY: "",
      AUTH_ISSUER: "",
      AUTH_AUDIENCE: "",
      AUTH_WORKSPACE_CLAIM: "workspace_id",
      LOG_LEVEL: "warn",
      ...db.env,
    },
    `http://127.0.0.1:${port}/healthz`,
  );
  return { base: `http://127.0.0.1:${port}`, stop: () => proc.stop() };
}

// ---------------------------------------------------------------------------------------------
// Upload rate

async function uploadImages(count: number): Promise<Buffer[]> {
  const src = path.join(ROOT, "fixtures/images/rocket.jpg");
  const { width = 640, height = 427 } = await sharp(src).metadata();
  const images: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const left = i % 97;
    const top = (i * 7) % 61;
    images.push(
      await sharp(src)
        .extract({ left, top, width: width - left - (i % 13), height: height - top - (i % 11) })
        .resize(320 + (i % 160))
        .jpeg({ quality: 70 + (i % 20) })
        .toBuffer(),
    );
  }
  const distinct = new Set(images.map((b) => createHash("sha256").update(b).digest("hex")));
  if (distinct.size !== images.length) throw new Error("upload images are not distinct");
  return images;
}

async function benchUploads(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-mgmt-upload-"));
  const warm = UPLOAD_CONCURRENCY;
  const images = await uploadImages(UPLOADS + warm);
  const avgBytes = images.reduce((s, b) => s + b.length, 0) / images.length;

  // Reference: the same per-image work in-process, no HTTP, no multipart, no database.
  const store = new FilesystemBlobStore(path.join(dir, "reference-blobs"));
  const reference = async (buf: Buffer) => {
    const meta = await sharp(buf, { limitInputPixels: LIMIT_INPUT_PIXELS, failOn: "error" }).metadata();
    if (meta.format !== "jpeg" || !meta.width || !meta.height) throw new Error("unexpected metadata");
    const bits = await phash(buf, { limitInputPixels: LIMIT_INPUT_PIXELS, failOn: "error" });
    if (bits.length !== 64) throw new Error("unexpected phash");
    createHash("sha256").update(buf).digest("hex");
    await store.put(originalKey(randomUUID()), buf, "image/jpeg");
  };

  progress(`upload: ${images.length} images made`);
  const db = await createBenchDatabase("upload", dir);
  const service = await startService(path.join(dir, "service"), db);
  const auth = `Bearer ${token(WORKSPACE)}`;
  const upload = async (buf: Buffer, name: string) => {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(buf)], { type: "image/jpeg" }), name);
    const res = await fetch(`${service.base}/v1/assets/upload`, {
      method: "POST",
      headers: { authorization: auth },
      body: form,
    });
    if (res.status !== 201) throw new Error(`upload: ${res.status} ${await res.text()}`);
    await res.json();
  };

  let svcWall: number;
  let svcLat: number[];
  let rows: number;
  try {
    await runPool(images.slice(0, warm), UPLOAD_CONCURRENCY, (b) => upload(b, "warm.jpg"));
    const measured = images.slice(warm);
    [svcWall, svcLat] = await clock(() =>
      runPool(
        measured.map((b, i) => ({ b, i })),
        UPLOAD_CONCURRENCY,
        ({ b, i }) => upload(b, `bench-${i}.jpg`),
      ),
    );
    const list = await fetch(`${service.base}/v1/assets?limit=1`, { headers: { authorization: auth } });
    rows = ((await list.json()) as { count: number }).count;
  } finally {
    progress("upload: service measured, stopping");
    await service.stop();
    await db.drop();
  }
  if (rows !== images.length) throw new Error(`expected ${images.length} assets after the upload run, got ${rows}`);

  await runPool(images.slice(0, warm), UPLOAD_CONCURRENCY, reference);
  const [refWall, refLat] = await clock(() => runPool(images.slice(warm), UPLOAD_CONCURRENCY, reference));
  rmSync(dir, { recursive: true, force: true });

  const svcRate = UPLOADS / (svcWall / 1000);
  const refRate = UPLOADS / (refWall / 1000);
  return [
    `Upload: ${UPLOADS} distinct JPEGs (avg ${(avgBytes / 1024).toFixed(0)} KiB, 320-479 px wide), concurrency ${UPLOAD_CONCURRENCY}, ${db.kind}:`,
    table(
      ["path", "uploads/s", "p50 latency", "p99 latency", "time ratio"],
      [
        [
          "in-process reference (sharp metadata + phash decode + sha256 + blob put)",
          refRate.toFixed(1),
          ms(median(refLat)),
          ms(percentile(refLat, 0.99)),
          "1.00x",
        ],
        [
          "POST /v1/assets/upload (HTTP + multipart + DB)",
          svcRate.toFixed(1),
          ms(median(svcLat)),
          ms(percentile(svcLat, 0.99)),
          ratio(svcWall, refWall),
        ],
      ],
    ),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Search at 100k assets

/**
 * Vocabulary for the generated metadata. Words are drawn with density ~ 1/sqrt(rank), so early
 * words are frequent and late ones uncommon; families (mountain/mountains, run/running) exercise
 * stemming. "zeppelin" is injected into a handful of captions only.
 */
const WORDS = (
  "photo image picture view light blue green summer city night street portrait color sky water " +
  "people old new black white house road tree winter morning evening day red forest river " +
  "mountain beach sunset travel nature snow lake park garden family friends holiday dog cat " +
  "bridge building window door car train station market food coffee table chair book music " +
  "concert festival wedding party birthday children playing running runner run walking walk " +
  "mountains beaches sunsets rivers lakes bridges buildings windows cars trains markets flowers " +
  "flower field meadow hill valley cliff ocean sea wave waves harbor boat boats ship sail sailing " +
  "island palm sand desert dune rock rocks stone canyon waterfall fountain glacier volcano cloud " +
  "clouds storm rain fog mist sunrise dawn dusk moon stars galaxy aurora lightning rainbow shadow " +
  "reflection silhouette macro closeup texture pattern abstract minimal vintage retro analog film " +
  "grain studio office meeting team product launch rocket space satellite telescope laboratory " +
  "science engineering factory machine robot drone camera lens tripod aerial panorama landscape " +
  "architecture interior kitchen bedroom living bathroom stairs tower castle church temple ruins " +
  "museum gallery statue sculpture painting mural graffiti alley neon sign lantern candle fire " +
  "campfire tent camping hiking trail backpack bicycle cycling skate surfing swimming diving " +
  "underwater coral fish whale dolphin turtle bird eagle owl parrot butterfly bee horse cow sheep " +
  "goat farm barn tractor harvest wheat corn vineyard wine cheese bread bakery dessert cake " +
  "chocolate fruit apple orange lemon strawberry vegetable salad soup pasta pizza sushi noodles " +
  "breakfast lunch dinner restaurant cafe bar cocktail beer tea mountaineer summit ridge avalanche"
)
  .split(/\s+/)
  .filter(Boolean);

const wordsLiteral = `ARRAY[${WORDS.map((w) => `'${w}'`).join(",")}]::text[]`;

/** One batch of generated rows for `workspace`, ids lo..hi. The trigger fills search_vector/search_text. */
function seedSql(): string {
  const pick = "v.w[1 + floor(power(random(), 2) * v.n)::int]";
  // "+ 0 * s.j": the aggregate must reference the subquery's own column, else Postgres treats
  // string_agg (whose arguments would only use outer columns) as an aggregate of the outer query.
  const inner = "v.w[1 + floor(power(random(), 2) * v.n)::int + 0 * s.j]";
  const phrase = (min: number, spread: number) =>
    `(SELECT string_agg(${inner}, ' ') FROM generate_series(1, ${min} + g.i % ${spread}) AS s(j))`;
  return `
    INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, user_description,
                        original_filename, mime_type, format, width, height, bytes, sha256, phash,
                        created_by, created_at, updated_at)
    SELECT gen_random_uuid(), $1::text,
           CASE WHEN g.i % 10 = 0 THEN NULL ELSE ${phrase(2, 3)} END,
           ARRAY(SELECT ${inner} FROM generate_series(1, 1 + g.i % 4) AS s(j)),
           CASE WHEN g.i % 4 = 0 THEN NULL ELSE ${phrase(4, 5)} END
             || CASE WHEN g.i % 8191 = 7 THEN ' zeppelin over the hangar' ELSE '' END,
           CASE WHEN g.i % 3 = 0 THEN NULL ELSE ${phrase(8, 9)} END,
           'IMG_' || lpad(g.i::text, 6, '0') || '_' || ${pick} || '.jpg',
           'image/jpeg', 'jpeg', 640 + g.i % 1000, 480 + g.i % 700, 50000 + (g.i * 7919) % 2000000,
           encode(sha256(convert_to($1::text || ':' || g.i::text, 'UTF8')), 'hex'),
           (g.i::bigint * 2654435761) % 9223372036854775807,
           'bench-user',
           timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => g.i * 60),
           timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => g.i * 60)
      FROM generate_series($2::int, $3::int) AS g(i),
           (SELECT ${wordsLiteral} AS w, ${WORDS.length} AS n) v`;
}

async function seed(raw: RawDb): Promise<number> {
  const [msSeed] = await clock(async () => {
    await raw.transaction(async (tx) => {
      await tx.query("SELECT setseed(0.42)");
      const sql = seedSql();
      const batch = 20_000;
      for (let lo = 1; lo <= ASSETS; lo += batch) {
        await tx.query(sql, [WORKSPACE, lo, Math.min(ASSETS, lo + batch - 1)]);
      }
      await tx.query(sql, [OTHER_WORKSPACE, 1, OTHER_ASSETS]);
    });
    await raw.query("VACUUM ANALYZE assets, search_words");
    // Flush the bulk load now, so that a checkpoint does not land in the measurements.
    await raw.query("CHECKPOINT");
  });
  return msSeed;
}

/** The columns Prisma selects for an Asset (search_vector is Unsupported and never read). */
const ASSET_COLUMNS =
  "id, workspace_id, collection_id, user_title, user_tags, user_caption, user_description, original_filename, " +
  "mime_type, format, width, height, bytes, sha256, phash, created_by, search_text, created_at, updated_at";

interface AssetRow {
  id: string;
  created_at: Date | string;
}

/** search.ts's spellingCorrections as plain SQL (the threshold is transaction-local). */
const CORRECTIONS_SQL = `
  SELECT w.word, array_agg(s.word ORDER BY s.sim DESC, s.word) AS suggestions,
         tsvector_to_array(to_tsvector('english', string_agg(s.word, ' '))) AS lexemes
    FROM (SELECT DISTINCT t.lexeme AS word
            FROM unnest(to_tsvector('simple', $1)) AS t
           WHERE t.lexeme ~ $3
             AND numnode(plainto_tsquery('english', t.lexeme)) > 0) w
    CROSS JOIN LATERAL (
          SELECT d.word, similarity(w.word, d.word) AS sim
            FROM search_words d
           WHERE d.workspace_id = $2 AND w.word <% d.word AND d.word <> w.word
           ORDER BY sim DESC, d.word
           LIMIT $4) s
   WHERE NOT EXISTS (SELECT 1 FROM assets a
                      WHERE a.workspace_id = $2 AND a.search_vector @@ plainto_tsquery('english', w.word))
   GROUP BY w.word
   ORDER BY w.word`;
const correctionsParams = (plain: string, workspace: string): unknown[] => [
  plain,
  workspace,
  SEARCH_WORD_PATTERN,
  SUGGESTIONS_PER_WORD,
];
const TRGM_SETUP = `SET LOCAL pg_trgm.word_similarity_threshold = ${TRIGRAM_THRESHOLD}`;

interface Correction {
  word: string;
  suggestions: string[];
  lexemes: string[];
}

async function rawCorrections(raw: RawDb, workspace: string, plain: string): Promise<Correction[]> {
  return raw.transaction(async (tx) => {
    await tx.query(`SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)`, [String(TRIGRAM_THRESHOLD)]);
    return tx.query<Correction>(CORRECTIONS_SQL, correctionsParams(plain, workspace));
  });
}

/** search.ts's ts_rewrite chain; appends its parameters to `params` from $`first`. */
function correctedTsquery(tsq: string, first: number, corrections: Correction[], params: unknown[]): string {
  let out = tsq;
  let n = first;
  for (const c of corrections) {
    params.push(c.word, c.lexemes.join(" or "));
    out = `ts_rewrite(${out}, plainto_tsquery('english', $${n}), websearch_to_tsquery('simple', $${n + 1}))`;
    n += 2;
  }
  return out;
}

/** search.ts's fullTextSearch + the row fetch of searchAssetsFullText, as plain SQL. */
async function rawFullText(raw: RawDb, q: string): Promise<string[]> {
  const p = parseQuery(q);
  const params: unknown[] = [WEIGHTS, WORKSPACE, LIMIT, p.web];
  const tsq =
    p.prefix !== null
      ? `(websearch_to_tsquery('english', $4) || (websearch_to_tsquery('english', $5) && to_tsquery('english', $6)))`
      : `websearch_to_tsquery('english', $4)`;
  if (p.prefix !== null) params.push(p.head ?? "", `${p.prefix}:*`);
  let hits = await raw.query<{ id: string; score: number }>(
    `SELECT a.id::text AS id, ts_rank_cd($1::float4[], a.search_vector, q.tsq)::float8 AS score
       FROM assets a, (SELECT ${tsq} AS tsq) q
      WHERE a.workspace_id = $2 AND a.search_vector @@ q.tsq
      ORDER BY score DESC, a.created_at DESC, a.id ASC
      LIMIT $3`,
    params,
  );
  if (hits.length === 0 && p.plain.length >= 3 && !p.web.includes('"')) {
    const corrections = await rawCorrections(raw, WORKSPACE, p.plain);
    if (corrections.length > 0) {
      const corrected = correctedTsquery(tsq, params.length + 1, corrections, params);
      hits = await raw.query<{ id: string; score: number }>(
        `SELECT a.id::text AS id, ts_rank_cd($1::float4[], a.search_vector, q.tsq)::float8 AS score
           FROM assets a, (SELECT ${corrected} AS tsq) q
          WHERE a.workspace_id = $2 AND a.search_vector @@ q.tsq
          ORDER BY score DESC, a.created_at DESC, a.id ASC
          LIMIT $3`,
        params,
      );
    }
  }
  if (hits.length === 0) return [];
  const rows = await raw.query<{ id: string }>(
    `SELECT ${ASSET_COLUMNS} FROM assets WHERE workspace_id = $1 AND id = ANY($2::uuid[])`,
    [WORKSPACE, hits.map((h) => h.id)],
  );
  if (rows.length !== hits.length) throw new Error("row fetch lost hits");
  return hits.map((h) => h.id);
}

interface ListArgs {
  search?: string;
  after?: { createdAt: Date | string; id: string };
}

/** listAssets (sort -createdAt) as plain SQL: count + page of limit+1, run together. */
async function rawList(raw: RawDb, args: ListArgs): Promise<string[]> {
  const where = ["workspace_id = $1"];
  const params: unknown[] = [WORKSPACE];
  if (args.search !== undefined) {
    params.push(args.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`));
    where.push(`search_text::text LIKE ('%' || $${params.length} || '%')`);
  }
  // Prisma's count: a sub-select with OFFSET 0.
  const countSql = `SELECT count(*) AS count FROM (SELECT id FROM assets WHERE ${where.join(" AND ")} OFFSET 0) AS sub`;
  const countParams = [...params];
  if (args.after) {
    params.push(args.after.createdAt, args.after.id);
    const c = `$${params.length - 1}::timestamptz`;
    const i = `$${params.length}::uuid`;
    where.push(`(created_at < ${c} OR (created_at = ${c} AND id < ${i}))`);
  }
  params.push(LIMIT + 1);
  const [, rows] = await Promise.all([
    raw.query(countSql, countParams),
    raw.query<{ id: string }>(
      `SELECT ${ASSET_COLUMNS} FROM assets WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    ),
  ]);
  return rows.slice(0, LIMIT).map((r) => r.id);
}

/** EXPLAIN (ANALYZE) of a query; which of the assets indexes the plan reads. */
async function explainIndexes(raw: RawDb, sql: string, params: unknown[], setup?: string): Promise<string> {
  const plan = await raw.transaction(async (tx) => {
    if (setup) await tx.query(setup);
    return tx.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE) ${sql}`, params);
  });
  const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
  const used = [...new Set(text.match(/(assets|search_words)_[a-z0-9_]+_(idx|pkey)/g) ?? [])];
  const seq = /Seq Scan on assets/.test(text);
  return `${used.join(", ") || "no index"}${seq ? " + seq scan" : ""}`;
}

interface SearchCase {
  name: string;
  path: string;
  raw: (raw: RawDb) => Promise<string[]>;
  hits?: number;
  rawLat?: number[];
  rawIds?: string[];
  plan?: string;
}

async function benchSearch(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-mgmt-search-"));
  const db = await createBenchDatabase("search", dir);
  try {
    return await benchSearchOn(dir, db);
  } finally {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchSearchOn(dir: string, db: BenchDatabase): Promise<string> {
  const common = "mountains";
  const rare = "zeppelin";
  const prefix = "sun";
  const typoCommon = "montain";
  const typoRare = "zepelin";
  const substring = "ount";
  const PAGES_BEFORE = 20;

  let raw = await db.open();
  let rawOpen = true;
  try {
    progress(`search: seeding ${ASSETS} + ${OTHER_ASSETS} rows (${db.kind})`);
    const seedMs = await seed(raw);
    progress(`search: seeded in ${(seedMs / 1000).toFixed(1)} s`);
    const ftsCount = (q: string) =>
      raw
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_vector @@ websearch_to_tsquery('english', $2)`,
          [WORKSPACE, q],
        )
        .then((r) => r[0]!.n);
    const prefixCount = (q: string) =>
      raw
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_vector @@ to_tsquery('english', $2)`,
          [WORKSPACE, `${q}:*`],
        )
        .then((r) => r[0]!.n);
    // Rows matching the spelling-corrected query (the typo itself matches nothing).
    const correctedCount = async (q: string) => {
      const corrections = await rawCorrections(raw, WORKSPACE, q);
      const params: unknown[] = [WORKSPACE, q];
      const tsq = correctedTsquery(`websearch_to_tsquery('english', $2)`, 3, corrections, params);
      const [r] = await raw.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_vector @@ ${tsq}`,
        params,
      );
      return { n: r!.n, corrected: corrections.map((c) => `${c.word} -> ${c.suggestions.join("|")}`).join(", ") };
    };
    const likeCount = (s: string) =>
      raw
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_text LIKE $2`, [
          WORKSPACE,
          `%${s}%`,
        ])
        .then((r) => r[0]!.n);
    const [total] = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM assets`);

    // The row after which the "later page" starts (PAGES_BEFORE pages of LIMIT in -createdAt order).
    const [after] = await raw.query<AssetRow>(
      `SELECT id::text AS id, created_at FROM assets WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
      [WORKSPACE, PAGES_BEFORE * LIMIT - 1],
    );
    const afterArg = { createdAt: after!.created_at, id: after!.id };

    const typoCommonFix = await correctedCount(typoCommon);
    const typoRareFix = await correctedCount(typoRare);
    const fts = (q: string) => `/v1/assets/search/full-text?q=${encodeURIComponent(q)}`;
    const cases: SearchCase[] = [
      {
        name: `full-text common word "${common}"`,
        path: fts(common),
        raw: (r) => rawFullText(r, common),
        hits: await ftsCount(common),
      },
      {
        name: `full-text rare word "${rare}"`,
        path: fts(rare),
        raw: (r) => rawFullText(r, rare),
        hits: await ftsCount(rare),
      },
      {
        name: `full-text prefix "${prefix}"`,
        path: fts(prefix),
        raw: (r) => rawFullText(r, prefix),
        hits: await prefixCount(prefix),
      },
      {
        name: `full-text typo "${typoCommon}" (spelling correction: ${typoCommonFix.corrected})`,
        path: fts(typoCommon),
        raw: (r) => rawFullText(r, typoCommon),
        hits: typoCommonFix.n,
      },
      {
        name: `full-text typo "${typoRare}" (spelling correction: ${typoRareFix.corrected})`,
        path: fts(typoRare),
        raw: (r) => rawFullText(r, typoRare),
        hits: typoRareFix.n,
      },
      {
        name: `list search="${substring}" (substring)`,
        path: `/v1/assets?search=${substring}`,
        raw: (r) => rawList(r, { search: substring }),
        hits: await likeCount(substring),
      },
      { name: "list first page (limit=25)", path: "/v1/assets?limit=25", raw: (r) => rawList(r, {}), hits: ASSETS },
      {
        name: `list page ${PAGES_BEFORE + 1} via cursor`,
        path: "",
        raw: (r) => rawList(r, { after: afterArg }),
        hits: ASSETS,
      },
    ];

    // Plans: the ranked full-text query (GIN on search_vector), the trigram fallback and the LIKE.
    const ftsSql = (tsq: string) =>
      `SELECT a.id, ts_rank_cd('${WEIGHTS}'::float4[], a.search_vector, q.tsq) AS score
       FROM assets a, (SELECT ${tsq} AS tsq) q
      WHERE a.workspace_id = $1 AND a.search_vector @@ q.tsq
      ORDER BY score DESC, a.created_at DESC, a.id ASC LIMIT 25`;
    cases[0]!.plan = await explainIndexes(raw, ftsSql(`websearch_to_tsquery('english', $2)`), [WORKSPACE, common]);
    cases[1]!.plan = await explainIndexes(raw, ftsSql(`websearch_to_tsquery('english', $2)`), [WORKSPACE, rare]);
    cases[2]!.plan = await explainIndexes(
      raw,
      ftsSql(
        `(websearch_to_tsquery('english', $2) || (websearch_to_tsquery('english', '') && to_tsquery('english', $3)))`,
      ),
      [WORKSPACE, prefix, `${prefix}:*`],
    );
    // The typo: the dictionary lookup, then the ranked query with the corrected words.
    const typoPlan = async (q: string) => {
      const lookup = await explainIndexes(raw, CORRECTIONS_SQL, correctionsParams(q, WORKSPACE), TRGM_SETUP);
      const params: unknown[] = [WORKSPACE, q];
      const corrections = await rawCorrections(raw, WORKSPACE, q);
      const tsq = correctedTsquery(`websearch_to_tsquery('english', $2)`, 3, corrections, params);
      return `${lookup}, then ${await explainIndexes(raw, ftsSql(tsq), params)}`;
    };
    cases[3]!.plan = await typoPlan(typoCommon);
    cases[4]!.plan = await typoPlan(typoRare);
    cases[5]!.plan = await explainIndexes(
      raw,
      `SELECT count(*) FROM (SELECT id FROM assets WHERE workspace_id = $1 AND search_text::text LIKE ('%' || $2 || '%') OFFSET 0) AS sub`,
      [WORKSPACE, substring],
    );
    cases[6]!.plan = await explainIndexes(
      raw,
      `SELECT ${ASSET_COLUMNS} FROM assets WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT 26`,
      [WORKSPACE],
    );
    cases[7]!.plan = await explainIndexes(
      raw,
      `SELECT ${ASSET_COLUMNS} FROM assets WHERE workspace_id = $1 AND (created_at < $2::timestamptz OR (created_at = $2::timestamptz AND id < $3::uuid))
      ORDER BY created_at DESC, id DESC LIMIT 26`,
      [WORKSPACE, afterArg.createdAt, afterArg.id],
    );
    const ginUsed = cases
      .slice(0, 3)
      .map((c) => `${c.name.replace(/^full-text /, "")}: ${/assets_search_vector_idx/.test(c.plan!) ? "yes" : "no"}`)
      .join(", ");

    // Measure on a fresh connection, as the service gets one: on PGlite the instance that did the
    // bulk load is not representative (its WASM heap and buffers are full of the load).
    rawOpen = false;
    await raw.close();
    raw = await db.open();
    rawOpen = true;
    progress("search: plans done");
    // Reference: the same SQL on a direct connection. PGlite is one process's database at a time,
    // so there it is measured before the service starts; on Postgres raw and service samples
    // alternate, so that load from elsewhere on the machine hits both alike.
    const interleave = db.kind === "postgres";
    let rawRate = 0;
    if (!interleave) {
      for (const c of cases) {
        c.rawIds = await c.raw(raw);
        c.rawLat = await sample(REQUESTS, () => c.raw(raw));
      }
      rawRate = await closedLoopRate(SECONDS, LOAD_CONNECTIONS, () => cases[0]!.raw(raw));
      rawOpen = false;
      await raw.close();
    }

    progress(`search: ${interleave ? "" : "raw SQL measured, "}starting the service`);
    const service = await startService(path.join(dir, "service"), db);
    const auth = `Bearer ${token(WORKSPACE)}`;
    const get = async (
      p: string,
    ): Promise<{ assets: Array<{ id: string }>; nextCursor?: string | null; count: number }> => {
      const res = await fetch(`${service.base}${p}`, { headers: { authorization: auth } });
      if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { assets: Array<{ id: string }>; nextCursor?: string | null; count: number };
    };
    const rows: string[][] = [];
    let load: autocannon.Result;
    try {
      // The later page: follow nextCursor like a client would.
      let page = await get("/v1/assets?limit=25");
      for (let i = 0; i < PAGES_BEFORE; i++) {
        if (i === PAGES_BEFORE - 1) cases[7]!.path = `/v1/assets?limit=25&cursor=${page.nextCursor!}`;
        page = await get(`/v1/assets?limit=25&cursor=${page.nextCursor!}`);
      }
      for (const c of cases) {
        const first = await get(c.path);
        let lat: number[];
        if (interleave) {
          c.rawIds = await c.raw(raw);
          for (let i = 0; i < 3; i++) await Promise.all([c.raw(raw), get(c.path)]);
          lat = [];
          c.rawLat = [];
          for (let i = 0; i < REQUESTS; i++) {
            c.rawLat.push((await clock(() => c.raw(raw)))[0]);
            lat.push((await clock(() => get(c.path)))[0]);
          }
        } else {
          lat = await sample(REQUESTS, () => get(c.path));
        }
        const same = JSON.stringify(first.assets.map((a) => a.id)) === JSON.stringify(c.rawIds);
        const s50 = median(lat);
        const r50 = median(c.rawLat!);
        rows.push([
          c.name,
          String(c.hits),
          ms(s50),
          ms(percentile(lat, 0.99)),
          ms(r50),
          ms(percentile(c.rawLat!, 0.99)),
          ratio(s50, r50),
          same ? "yes" : "NO",
          c.plan!,
        ]);
      }
      if (interleave) rawRate = await closedLoopRate(SECONDS, LOAD_CONNECTIONS, () => cases[0]!.raw(raw));
      load = await autocannon({
        url: `${service.base}${cases[0]!.path}`,
        connections: LOAD_CONNECTIONS,
        duration: SECONDS,
        headers: { authorization: auth },
      });
      if (load.non2xx > 0 || load.errors > 0) throw new Error(`load: ${load.non2xx} non-2xx, ${load.errors} errors`);
    } finally {
      await service.stop();
    }
    const rps = load.requests.average;

    return [
      `Search at ${ASSETS.toLocaleString("en")} assets (+${OTHER_ASSETS.toLocaleString("en")} of a second workspace, ${total!.n} rows), ${db.kind}, seeded in ${(seedMs / 1000).toFixed(1)} s.`,
      `p50/p99 of ${REQUESTS} sequential requests each${db.kind === "postgres" ? " (raw and service samples alternating)" : " (raw SQL measured before the service started)"}; reference = the same SQL on a direct ${db.kind === "postgres" ? "pg connection pool" : "PGlite connection"} (no HTTP, no Prisma); "same ids" = the service returned the reference's page:`,
      table(
        [
          "query",
          "matching rows",
          "service p50",
          "service p99",
          "raw SQL p50",
          "raw SQL p99",
          "p50 ratio",
          "same ids",
          "indexes (EXPLAIN ANALYZE)",
        ],
        rows,
      ),
      "",
      `index used (GIN assets_search_vector_idx in the EXPLAIN ANALYZE of the ranked full-text query): ${ginUsed}`,
      "",
      `Throughput of full-text "${common}", ${SECONDS} s, ${LOAD_CONNECTIONS} connections:`,
      table(
        ["path", "req/s", "p50 latency", "p99 latency", "ratio"],
        [
          ["raw SQL, 10 concurrent callers", rawRate.toFixed(0), "", "", "1.00"],
          [
            "service (autocannon)",
            rps.toFixed(0),
            `${load.latency.p50} ms`,
            `${load.latency.p99} ms`,
            (rps / rawRate).toFixed(2),
          ],
        ],
      ),
    ].join("\n");
  } finally {
    if (rawOpen) await raw.close();
  }
}

export async function benchManagement(): Promise<string> {
  const parts: string[] = [];
  if (process.env.BENCH_SKIP_UPLOAD !== "1") parts.push(await benchUploads());
  if (process.env.BENCH_SKIP_SEARCH !== "1") parts.push(await benchSearch());
  return parts.join("\n\n");
}

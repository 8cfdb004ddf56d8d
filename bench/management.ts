/**
 * Management benchmarks, each next to a reference measured in the same run (only ratios are meant
 * to be compared between machines):
 *  - Upload rate: N distinct small JPEGs through POST /v1/assets/upload (HTTP + multipart + DB row
 *    + blob), next to the same per-image work done in-process without HTTP or database (sharp
 *    metadata, full decode via the perceptual hash, sha256, blob write with the same blob store).
 *  - Search and listing at scale: full-text and list queries over HTTP, next to the same SQL run
 *    directly on a database connection, recall@25 of the bounded ranking, throughput from wrk;
 *    EXPLAIN (ANALYZE) shows which index each query uses.
 *
 * Postgres when BENCH_DATABASE_URL or DATABASE_URL is set (a fresh database is created and dropped),
 * and PGlite persisted in a temp folder; BENCH_SEARCH_DATABASE_URL adds a kept, seeded-once
 * database of BENCH_LARGE_ASSETS (default 1,000,000) assets.
 */
import { execFile, spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import jwt from "jsonwebtoken";
import pg from "pg";
import sharp from "sharp";
import phash from "sharp-phash";
import { LIST_EXACT_COUNT_LIMIT } from "@media-platform/contracts";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { createPGlite, migrate, openDatabase, Prisma } from "@media-platform/management/database";
import {
  ASSET_COLUMNS,
  CANDIDATES_PER_RESULT,
  candidatesAreExact,
  conjunctionIsExact,
  conjunctionPlan,
  pairsAreExact,
  parseQuery,
  rankCandidates,
  rankConjunction,
  rankExact,
  rankPairs,
} from "@media-platform/management/assets";
import { benchManagementAuthEnv, freePort, getJson, median, startProcess, table, type LoadResult } from "./harness";
import { benchPhoneUploads } from "./phone-uploads";
import { seedCorpus, WORKSPACE } from "./search-corpus";
import {
  FACETS,
  LIMIT,
  openPool,
  rawFullText,
  rawFullTextFacets,
  rawList,
  rawPrisma,
  tsqueryOf,
  type RawDb,
  type Tx,
} from "./search-sql";

const ROOT = path.resolve(__dirname, "..");
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 200);
const UPLOAD_CONCURRENCY = 4;
const ASSETS = Number(process.env.BENCH_ASSETS ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
/** Longest a row's sequential sampling goes on once it has 20 samples (slow exact queries). */
const CASE_SECONDS = Number(process.env.BENCH_CASE_SECONDS ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const LOAD_CONNECTIONS = 10;
const SECRET = "bench-secret-0123456789abcdef0123456789";
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

interface BenchDatabase {
  kind: "postgres" | "pglite";
  /** Environment for the service process. */
  env: Record<string, string>;
  /** Opens a raw connection (a pool of 10 on Postgres, the same size as the service's). */
  open(): Promise<RawDb>;
  drop(): Promise<void>;
}

/** A migrated Postgres database: raw pools of 10 (the service's pool size) and the service's env. */
function postgresDatabase(databaseUrl: string, drop: () => Promise<void>): BenchDatabase {
  return {
    kind: "postgres",
    env: { DATABASE_URL: databaseUrl },
    open: async () => openPool(databaseUrl),
    drop,
  };
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
    return postgresDatabase(databaseUrl, async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    });
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
      ...benchManagementAuthEnv(SECRET),
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
// Search at scale

/** EXPLAIN (ANALYZE) of statements; which of the tables' indexes the plans read (nodes that ran). */
async function explainIndexes(raw: RawDb, statements: Array<{ text: string; values: unknown[] }>): Promise<string> {
  const used = new Set<string>();
  let seq = false;
  for (const s of statements) {
    const plan = await raw.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE) ${s.text}`, s.values);
    // A node that never ran (the spelling lookup under CASE of a query with hits) read nothing.
    const text = plan
      .map((r) => r["QUERY PLAN"])
      .filter((line) => !line.includes("(never executed)"))
      .join("\n");
    for (const m of text.match(
      /(assets|search_words|search_terms|search_pairs|search_prefixes)(_[a-z0-9_]+)?_(idx|pkey)/g,
    ) ?? [])
      used.add(m);
    if (/Seq Scan on assets/.test(text)) seq = true;
  }
  return `${[...used].join(", ") || "no index"}${seq ? " + seq scan" : ""}`;
}

/** wrk from its own process: req/s and latency percentiles of `url` at `connections`. */
export async function wrk(url: string, connections: number, seconds: number, auth: string): Promise<LoadResult> {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      "wrk",
      ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-H", `authorization: ${auth}`, url],
      { timeout: (seconds + 30) * 1000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
  const num = (re: RegExp): number => {
    const m = out.match(re);
    if (!m) throw new Error(`unexpected wrk output:\n${out}`);
    const v = Number(m[1]);
    return m[2] === "s" ? v * 1000 : m[2] === "us" ? v / 1000 : v;
  };
  if (/Non-2xx or 3xx responses/.test(out)) throw new Error(`wrk: non-2xx responses\n${out}`);
  return {
    rps: num(/Requests\/sec:\s+([0-9.]+)/),
    p50: num(/50%\s+([0-9.]+)(us|ms|s)/),
    p99: num(/99%\s+([0-9.]+)(us|ms|s)/),
  };
}

export const hasWrk = (): boolean => spawnSync("wrk", ["-v"], { stdio: "ignore" }).error === undefined;

interface SearchCase {
  name: string;
  path: string;
  /** The same request on the bare reference server (bare-search-server.ts). */
  bare: string;
  raw: (raw: RawDb) => Promise<unknown>;
  hits: number;
  /** p95 target of the issue, ms (none for the informational rows). */
  target?: number;
  plan?: string;
  rawLat?: number[];
  /** The raw SQL's page. */
  rawIds?: string[];
}

const idsOf = (result: unknown): string[] | undefined => (result as { ids?: string[] } | undefined)?.ids;

interface SearchRun {
  text: string;
  /**
   * Left running when the setup was asked to keep it (the PGlite comparison): the service, the
   * measured paths by query name, and what stops it and drops its database.
   */
  live?: { get: (p: string) => Promise<unknown>; paths: Map<string, string>; close: () => Promise<void> };
}

/**
 * Sequential samples of each of `fns` in turn (after 3 warm-up rounds), so that the machine's drift
 * hits them alike; each gets at least 20, at most REQUESTS or CASE_SECONDS.
 */
async function alternate(...fns: Array<() => Promise<unknown>>): Promise<number[][]> {
  for (let i = 0; i < 3; i++) for (const fn of fns) await fn();
  const samples = fns.map((): number[] => []);
  const end = performance.now() + CASE_SECONDS * 1000;
  while (samples[0]!.length < REQUESTS && (samples[0]!.length < 20 || performance.now() < end)) {
    for (const [i, fn] of fns.entries()) samples[i]!.push((await clock(fn))[0]);
  }
  return samples;
}

const RECALL_QUERIES = [
  "mountains",
  "photo",
  "lake",
  "sunset",
  "sun",
  "zeppelin",
  "mountains or lake",
  "sunset or beach or ocean",
  "mountain lake",
  "city night",
  "red car",
  "blue sky water",
  "city nig",
  "mountain la",
  '"mountain lake"',
  '"city night"',
];

interface Opened {
  db: BenchDatabase;
  /** Seed time in ms, or null when a kept database was already seeded. */
  seedMs: number | null;
  keep: boolean;
}

/** A kept Postgres database (BENCH_SEARCH_DATABASE_URL): migrated, seeded once, never dropped. */
async function keptDatabase(url: string, assets: number, otherAssets: number): Promise<Opened> {
  const db = await openDatabase({ databaseUrl: url });
  try {
    await migrate(await db.migrationConnection());
  } finally {
    await db.close();
  }
  const bench = postgresDatabase(url, async () => undefined);
  const raw = await bench.open();
  try {
    const [n] = await raw.query<{ n: number }>("SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1", [
      WORKSPACE,
    ]);
    if (n!.n === assets) return { db: bench, seedMs: null, keep: true };
    if (n!.n !== 0) throw new Error(`${url} holds ${n!.n} bench assets, not ${assets}: drop it or point elsewhere`);
    return { db: bench, seedMs: await seed(raw, assets, otherAssets), keep: true };
  } finally {
    await raw.close();
  }
}

async function seed(raw: RawDb, assets: number, otherAssets: number): Promise<number> {
  const [msSeed] = await clock(async () => {
    if (raw.kind === "postgres") await raw.query("SET maintenance_work_mem = '512MB'");
    await raw.transaction((tx) => seedCorpus(tx, { assets, otherAssets, progress }));
    await raw.query("VACUUM ANALYZE assets, search_words, search_terms, search_pairs, search_prefixes");
    // Flush the bulk load now, so that a checkpoint does not land in the measurements.
    await raw.query("CHECKPOINT");
  });
  return msSeed;
}

async function benchSearchSetup(
  label: string,
  open: () => Promise<Opened>,
  assets: number,
  otherAssets: number,
  keepService = false,
): Promise<SearchRun> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-mgmt-search-"));
  const opened = await open();
  const cleanUp = async () => {
    if (!opened.keep) await opened.db.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  let kept = false;
  try {
    const run = await benchSearchOn(label, dir, opened, assets, otherAssets, keepService);
    if (run.live) {
      kept = true;
      const stop = run.live.close;
      run.live.close = async () => (await stop(), await cleanUp());
    }
    return run;
  } finally {
    if (!kept) await cleanUp();
  }
}

async function benchSearchOn(
  label: string,
  dir: string,
  opened: Opened,
  assets: number,
  otherAssets: number,
  keepService: boolean,
): Promise<SearchRun> {
  const { db } = opened;
  const broad = "mountains";
  const rare = "zeppelin";
  const prefix = "sun";
  const typoBroad = "montain";
  const typoRare = "zepelin";
  const and = "mountain lake";
  const and3 = "blue sky water";
  const phrase = '"mountain lake"';
  const substring = "ount";
  const typing = "city nig";
  const typingMany = "mountain la";
  const PAGES_BEFORE = 49; // the cursor page measured is page 50

  let raw = await db.open();
  let rawOpen = true;
  try {
    let seedMs = opened.seedMs;
    if (!opened.keep) {
      progress(`search ${label}: seeding ${assets} + ${otherAssets} rows`);
      seedMs = await seed(raw, assets, otherAssets);
      progress(`search ${label}: seeded in ${(seedMs / 1000).toFixed(1)} s`);
    }
    const count = (sql: string, params: unknown[]) => raw.query<{ n: number }>(sql, params).then((r) => r[0]!.n);
    const ftsCount = (tsq: string, q: string) =>
      count(`SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_vector @@ ${tsq}`, [
        WORKSPACE,
        q,
      ]);
    // The matches of the query as the service runs it (with the last word's prefix match).
    const queryCount = async (q: string) => ftsCount("$2::tsquery", await tsqText(raw, tsqueryOf(q)));
    const [total] = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM assets`);
    const [postings] = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM search_terms`);

    const fts = (q: string) => `/v1/assets/search/full-text?q=${encodeURIComponent(q)}`;
    const bareFts = (q: string) => `/full-text?q=${encodeURIComponent(q)}`;
    const cases: SearchCase[] = [
      {
        name: `full-text broad word "${broad}"`,
        path: fts(broad),
        bare: bareFts(broad),
        raw: (r) => rawFullText(r, broad),
        hits: await queryCount(broad),
        target: 25,
      },
      {
        name: `full-text rare word "${rare}"`,
        path: fts(rare),
        bare: bareFts(rare),
        raw: (r) => rawFullText(r, rare),
        hits: await ftsCount(`websearch_to_tsquery('english', $2)`, rare),
        target: 10,
      },
      {
        name: `full-text typo "${typoRare}" (corrected to zeppelin)`,
        path: fts(typoRare),
        bare: bareFts(typoRare),
        raw: (r) => rawFullText(r, typoRare),
        hits: await ftsCount(`websearch_to_tsquery('english', $2)`, rare),
        target: 10,
      },
      {
        name: `full-text typo "${typoBroad}" (corrected to mountain)`,
        path: fts(typoBroad),
        bare: bareFts(typoBroad),
        raw: (r) => rawFullText(r, typoBroad),
        hits: await ftsCount(`websearch_to_tsquery('english', $2)`, "mountain or mountains or mountaineer"),
      },
      {
        name: `full-text prefix "${prefix}"`,
        path: fts(prefix),
        bare: bareFts(prefix),
        raw: (r) => rawFullText(r, prefix),
        hits: await ftsCount(`to_tsquery('english', $2)`, `${prefix}:*`),
        target: 25,
      },
      {
        name: `full-text two words "${and}" (AND)`,
        path: fts(and),
        bare: bareFts(and),
        raw: (r) => rawFullText(r, and),
        hits: await queryCount(and),
        target: 30,
      },
      {
        name: `full-text three words "${and3}" (AND)`,
        path: fts(and3),
        bare: bareFts(and3),
        raw: (r) => rawFullText(r, and3),
        hits: await queryCount(and3),
        target: 30,
      },
      {
        name: `full-text phrase ${phrase}`,
        path: fts(phrase),
        bare: bareFts(phrase),
        raw: (r) => rawFullText(r, phrase),
        hits: await queryCount(phrase),
        target: 40,
      },
      {
        name: `list search="${substring}" (substring)`,
        path: `/v1/assets?search=${substring}`,
        bare: `/list?search=${substring}`,
        raw: (r) => rawList(r, { search: substring }),
        hits: await count(`SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_text LIKE $2`, [
          WORKSPACE,
          `%${substring}%`,
        ]),
        target: 40,
      },
      {
        name: "list first page (limit=25)",
        path: "/v1/assets?limit=25",
        bare: "/list",
        raw: (r) => rawList(r, {}),
        hits: assets,
        target: 10,
      },
      {
        name: `list page ${PAGES_BEFORE + 1} via cursor`,
        path: "",
        bare: "",
        raw: () => Promise.resolve(),
        hits: assets,
        target: 10,
      },
    ];
    cases.push({
      name: `full-text broad word "${broad}" + facets=${FACETS.join(",")}`,
      path: `${fts(broad)}&facets=${FACETS.join(",")}`,
      bare: `${bareFts(broad)}&facets=1`,
      raw: (r) => rawFullTextFacets(r, broad),
      hits: cases[0]!.hits,
      target: 50,
    });
    // What a search box sends while the second word is being typed (no target): a last word with
    // one completion ("nig": night) ranks from that word pair's rows; one with several ("la": lake,
    // landscape, lantern, ...) ranks every match, since no pair's rows bound their union.
    for (const typed of [typing, typingMany]) {
      cases.push({
        name: `full-text two words, the last typed partly "${typed}"`,
        path: fts(typed),
        bare: bareFts(typed),
        raw: (r) => rawFullText(r, typed),
        hits: await count(
          `SELECT count(*)::int AS n FROM assets WHERE workspace_id = $1 AND search_vector @@ (websearch_to_tsquery('english', $2) && to_tsquery('english', $3))`,
          [WORKSPACE, typed.split(" ")[0], `${typed.split(" ")[1]}:*`],
        ),
      });
    }
    const [after] = await raw.query<{ id: string; created_at: Date | string }>(
      `SELECT id::text AS id, created_at FROM assets WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
      [WORKSPACE, PAGES_BEFORE * LIMIT - 1],
    );
    cases[10]!.raw = (r) => rawList(r, { after: { createdAt: after!.created_at, id: after!.id } });
    cases[10]!.bare = `/list?afterCreatedAt=${encodeURIComponent(new Date(after!.created_at).toISOString())}&afterId=${after!.id}`;

    // Plans: every statement each full-text request runs, and the list queries.
    for (const c of [...cases.slice(0, 8), ...cases.slice(12)]) {
      const seen: Prisma.Sql[] = [];
      await rawFullText(raw, decodeURIComponent(c.path.split("q=")[1]!), seen);
      c.plan = await explainIndexes(raw, seen);
    }
    {
      const seen: Prisma.Sql[] = [];
      await rawFullTextFacets(raw, broad, seen);
      cases[11]!.plan = await explainIndexes(raw, seen);
    }
    cases[8]!.plan = await explainIndexes(raw, [
      {
        text: `SELECT count(*) FROM (SELECT id FROM assets WHERE workspace_id = $1 AND deleted_at IS NULL AND search_text LIKE $2 LIMIT ${LIST_EXACT_COUNT_LIMIT + 1}) AS sub`,
        values: [WORKSPACE, `%${substring}%`],
      },
    ]);
    cases[9]!.plan = await explainIndexes(raw, [
      {
        text: `SELECT ${ASSET_COLUMNS} FROM assets WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 26`,
        values: [WORKSPACE],
      },
      {
        text: `SELECT count(*) FROM (SELECT id FROM assets WHERE workspace_id = $1 AND deleted_at IS NULL LIMIT ${LIST_EXACT_COUNT_LIMIT + 1}) AS sub`,
        values: [WORKSPACE],
      },
    ]);
    cases[10]!.plan = await explainIndexes(raw, [
      {
        text: `SELECT ${ASSET_COLUMNS} FROM assets WHERE workspace_id = $1 AND deleted_at IS NULL AND (created_at < $2::timestamptz OR (created_at = $2::timestamptz AND id < $3::uuid)) ORDER BY created_at DESC, id DESC LIMIT 26`,
        values: [WORKSPACE, after!.created_at, after!.id],
      },
    ]);

    // Recall@25 of the bounded candidates against the exact ranking over every match, and whether
    // the candidates alone answered (proved exact) or the exact ranking was needed.
    const recallRows: string[][] = [];
    const exactPages = new Map<string, string[]>();
    const rp = rawPrisma(raw);
    for (const q of RECALL_QUERIES) {
      const tsq = tsqueryOf(q);
      const exact = await rankExact(rp, WORKSPACE, tsq, LIMIT);
      exactPages.set(
        q,
        exact.map((h) => h.id),
      );
      const plan = await conjunctionPlan(rp, parseQuery(q));
      type Try = { hits: Array<{ id: string }>; bounded: boolean; proved: boolean };
      const tries: Try[] = [];
      // Two words and phrases: the service tries the pair lists first, at both depths.
      const pairTries: Try[] = [];
      if (plan?.pairs) {
        for (const perResult of CANDIDATES_PER_RESULT) {
          const r = await rankPairs(rp, WORKSPACE, tsq, plan, { limit: LIMIT, perResult });
          pairTries.push({ hits: r.hits, bounded: r.applicable, proved: pairsAreExact(r, LIMIT) });
        }
      }
      const pairProved = pairTries.findIndex((c) => c.proved);
      for (const perResult of CANDIDATES_PER_RESULT) {
        if (plan !== null) {
          const c = await rankConjunction(rp, WORKSPACE, tsq, plan, { limit: LIMIT, perResult });
          tries.push({ hits: c.hits, bounded: true, proved: conjunctionIsExact(c, plan, LIMIT) });
        } else {
          const c = await rankCandidates(rp, WORKSPACE, tsq, { limit: LIMIT, perResult });
          tries.push({ hits: c.hits, bounded: c.disjunction, proved: c.disjunction && candidatesAreExact(c, LIMIT) });
        }
      }
      const recall = (c: Try): string => {
        if (!c.bounded) return "-";
        const got = new Set(c.hits.map((h) => h.id));
        return (exact.length === 0 ? 1 : exact.filter((h) => got.has(h.id)).length / exact.length).toFixed(2);
      };
      // The service tries a conjunction's candidates once (the first size), a disjunction's twice.
      const proved = tries.findIndex((c, i) => c.proved && (plan === null || i === 0));
      const shown = pairTries.length > 0 && pairTries[0]!.bounded ? pairTries : tries;
      const kind = plan ? `, ${q.startsWith('"') ? "phrase" : "AND"}` : "";
      recallRows.push([
        q,
        (await ftsCount("$2::tsquery", await tsqText(raw, tsq))).toLocaleString("en"),
        ...shown.map(recall),
        pairProved >= 0
          ? `word pairs x${CANDIDATES_PER_RESULT[pairProved]} (proved exact${kind})`
          : !tries[0]!.bounded
            ? "exact ranking (-word / mixed query)"
            : proved < 0
              ? "exact ranking (candidates not proved)"
              : `candidates x${CANDIDATES_PER_RESULT[proved]} (proved exact${kind})`,
      ]);
    }

    // Measure on a fresh connection, as the service gets one: on PGlite the instance that did the
    // bulk load is not representative (its WASM heap and buffers are full of the load).
    rawOpen = false;
    await raw.close();
    raw = await db.open();
    rawOpen = true;
    progress(`search ${label}: plans and recall done`);

    // PGlite is one process's database at a time: there the raw SQL is measured before the service
    // starts. On Postgres raw and service samples alternate, so that load from elsewhere on the
    // machine hits both alike.
    const interleave = db.kind === "postgres";
    let rawRate = 0;
    if (!interleave) {
      for (const c of cases) {
        c.rawIds = idsOf(await c.raw(raw));
        for (let i = 0; i < 2; i++) await c.raw(raw);
        c.rawLat = [];
        const end = performance.now() + CASE_SECONDS * 1000;
        while (c.rawLat.length < REQUESTS && (c.rawLat.length < 20 || performance.now() < end)) {
          c.rawLat.push((await clock(() => c.raw(raw)))[0]);
        }
      }
      rawRate = await closedLoopRate(SECONDS, LOAD_CONNECTIONS, () => cases[0]!.raw(raw));
      rawOpen = false;
      await raw.close();
    }

    progress(`search ${label}: starting the service`);
    const service = await startService(path.join(dir, "service"), db);
    // On Postgres, the bare reference server (same SQL, node:http, JSON.stringify of the rows).
    let bare: { base: string; stop(): Promise<void> } | null = null;
    const auth = `Bearer ${token(WORKSPACE)}`;
    type Body = { assets: Array<{ id: string }>; nextCursor?: string | null; count: number; countIsEstimate?: boolean };
    const get = (p: string): Promise<Body> => getJson<Body>(`${service.base}${p}`, { authorization: auth });
    const getBare = (p: string): Promise<Body> => getJson<Body>(`${bare!.base}${p}`);
    const rows: string[][] = [];
    let live: SearchRun["live"];
    let load: LoadResult | null = null;
    const loadStart = os.loadavg()[0]!;
    let listCount = "";
    let httpFloor = "";
    let bareFloor = "";
    try {
      if (interleave) {
        const port = await freePort();
        const proc = await startProcess(
          "bench/bare-search-server.ts",
          { PORT: String(port), DATABASE_URL: db.env.DATABASE_URL! },
          `http://127.0.0.1:${port}/healthz`,
        );
        bare = { base: `http://127.0.0.1:${port}`, stop: () => proc.stop() };
      }
      // The later page: follow nextCursor like a client would.
      let page = await get("/v1/assets?limit=25");
      listCount = `${page.count}${page.countIsEstimate ? " (countIsEstimate: true)" : " (exact)"}`;
      for (let i = 1; i < PAGES_BEFORE; i++) page = await get(`/v1/assets?limit=25&cursor=${page.nextCursor!}`);
      cases[10]!.path = `/v1/assets?limit=25&cursor=${page.nextCursor!}`;
      for (const q of RECALL_QUERIES) {
        const served = (await get(fts(q))).assets.map((a) => a.id);
        const row = recallRows.find((r) => r[0] === q)!;
        row.push(JSON.stringify(served) === JSON.stringify(exactPages.get(q)) ? "yes" : "NO");
      }
      const sameIds = (body: Body, ids: string[] | undefined) =>
        JSON.stringify(body.assets.map((a) => a.id)) === JSON.stringify(ids);
      for (const c of cases) {
        const first = await get(c.path);
        if (interleave) c.rawIds = idsOf(await c.raw(raw));
        let same = sameIds(first, c.rawIds);
        let lat: number[];
        let bareLat: number[] = [];
        if (bare) {
          same &&= sameIds(await getBare(c.bare), c.rawIds);
          [c.rawLat, bareLat, lat] = (await alternate(
            () => c.raw(raw),
            () => getBare(c.bare),
            () => get(c.path),
          )) as [number[], number[], number[]];
        } else {
          lat = [];
          const end = performance.now() + CASE_SECONDS * 1000;
          for (let i = 0; i < 3; i++) await get(c.path);
          while (lat.length < REQUESTS && (lat.length < 20 || performance.now() < end)) {
            lat.push((await clock(() => get(c.path)))[0]);
          }
        }
        const s50 = median(lat);
        const s95 = percentile(lat, 0.95);
        const r50 = median(c.rawLat!);
        const r95 = percentile(c.rawLat!, 0.95);
        const b50 = bareLat.length > 0 ? median(bareLat) : null;
        const b95 = bareLat.length > 0 ? percentile(bareLat, 0.95) : null;
        rows.push([
          c.name,
          c.hits.toLocaleString("en"),
          String(lat.length),
          ms(s50),
          ms(s95),
          ms(percentile(lat, 0.99)),
          ms(r50),
          ms(r95),
          b50 === null ? "-" : `${ms(b50)} / ${ms(b95!)}`,
          ratio(s50, r50),
          ratio(s95, r95),
          b50 === null ? "-" : `${ratio(b50, r50)} / ${ratio(b95!, r95)}`,
          b50 === null ? "-" : `${ratio(s50, b50)} / ${ratio(s95, b95!)}`,
          c.target === undefined ? "" : `<= ${c.target} ms: ${s95 <= c.target ? "met" : "NOT met"}`,
          same ? "yes" : "NO",
          c.plan!,
        ]);
      }
      // The same client's cost of an HTTP round trip that runs no SQL: what no change to the
      // service's SQL path can take off a row's service latency.
      const floor = async (fn: () => Promise<unknown>): Promise<string> => {
        const lat: number[] = [];
        for (let i = 0; i < REQUESTS; i++) lat.push((await clock(fn))[0]);
        return `${ms(median(lat))} / ${ms(percentile(lat, 0.95))}`;
      };
      httpFloor = await floor(() => getJson(`${service.base}/healthz`, { authorization: auth }));
      if (bare) bareFloor = await floor(() => getBare("/healthz"));
      if (interleave) rawRate = await closedLoopRate(SECONDS, LOAD_CONNECTIONS, () => cases[0]!.raw(raw));
      if (hasWrk()) load = await wrk(`${service.base}${cases[0]!.path}`, LOAD_CONNECTIONS, SECONDS, auth);
      if (keepService) live = { get, paths: new Map(cases.map((c) => [c.name, c.path])), close: () => service.stop() };
    } finally {
      await bare?.stop();
      if (!live) await service.stop();
    }
    const loadEnd = os.loadavg()[0]!;

    const text = [
      `### ${label}: ${assets.toLocaleString("en")} assets (+${otherAssets.toLocaleString("en")} in a second workspace; ${total!.n.toLocaleString("en")} rows, ${postings!.n.toLocaleString("en")} search_terms postings)`,
      "",
      `${seedMs === null ? "Kept database, seeded by an earlier run" : `Seeded with SQL in ${(seedMs / 1000).toFixed(1)} s`}. Machine load (1-min load average) ${loadStart.toFixed(2)} at the start of the measurements, ${loadEnd.toFixed(2)} at the end (2 cores, shared). GET /v1/assets count of the workspace: ${listCount}.`,
      "",
      `Sequential requests (${REQUESTS} or ${CASE_SECONDS} s per row, at least 20)${interleave ? ", raw SQL and service samples alternating" : ", raw SQL measured before the service started"}; raw SQL = the service's own SQL (search.ts' statements, listAssets' count/page/estimate) on a direct ${db.kind === "postgres" ? "pg pool" : "PGlite connection"}, no HTTP, no Prisma; "same ids" = the service's page equals the raw SQL's. The HTTP floor of the same client (node:http, kept-alive connections) and machine, GET /healthz, which runs no SQL: ${httpFloor} at p50 / p95${bareFloor ? `; the bare server's: ${bareFloor}` : ""}.${interleave ? " Bare = the bare reference server (bench/bare-search-server.ts): the same SQL on a pool of 10 behind node:http, the rows as JSON.stringify gives them; no Express, authentication, validation, Prisma or serializer. Bare / raw is what HTTP and JSON alone add on this machine; service / bare is what the service adds to them." : ""}`,
      "",
      table(
        [
          "query",
          "matching rows",
          "samples",
          "service p50",
          "service p95",
          "service p99",
          "raw SQL p50",
          "raw SQL p95",
          "bare p50 / p95",
          "p50 ratio",
          "p95 ratio",
          "bare / raw SQL, p50 / p95",
          "service / bare, p50 / p95",
          "target (p95)",
          "same ids",
          "indexes (EXPLAIN ANALYZE)",
        ],
        rows,
      ),
      "",
      `Ranking (limit 25): recall@25 of the bounded candidates (each lexeme's best ${CANDIDATES_PER_RESULT.map((n) => n * LIMIT).join(", then ")} postings, ranked exactly; for two words and phrases, the word pair's best rows from search_pairs at the same depths) against the exact ranking over every match, what answered (candidates only when proved exact by the threshold check, see search.ts), and whether the service's page equals the exact ranking:`,
      "",
      table(
        [
          "query",
          "matching rows",
          ...CANDIDATES_PER_RESULT.map((n) => `recall@25, ${n * LIMIT} candidates/lexeme`),
          "answered by",
          "service page = exact ranking",
        ],
        recallRows,
      ),
      "",
      `Throughput of full-text "${broad}", ${SECONDS} s, ${LOAD_CONNECTIONS} connections${load ? "; load from wrk -t1 in its own process" : ""}:`,
      "",
      table(
        ["path", "req/s", "p50 latency", "p99 latency", "ratio", "target"],
        [
          [
            `raw SQL, ${LOAD_CONNECTIONS} concurrent callers (in the bench process)`,
            rawRate.toFixed(0),
            "",
            "",
            "1.00x",
            "",
          ],
          load
            ? [
                "service (wrk)",
                load.rps.toFixed(0),
                ms(load.p50),
                ms(load.p99),
                ratio(load.rps, rawRate),
                `>= 200 req/s: ${load.rps >= 200 ? "met" : "NOT met"}`,
              ]
            : ["service", "wrk is not installed (apt-get install -y wrk): not measured", "", "", "", ""],
        ],
      ),
    ].join("\n");
    return { text, live };
  } finally {
    if (rawOpen) await raw.close();
  }
}

async function tsqText(raw: RawDb, tsq: Prisma.Sql): Promise<string> {
  const sql = Prisma.sql`SELECT (${tsq})::text AS t`;
  const [row] = await raw.query<{ t: string }>(sql.text, sql.values);
  return row!.t;
}

/**
 * PGlite against Postgres, same corpus and queries: both services running, sequential requests
 * alternating between them per query (Postgres, PGlite, Postgres, ...), after a warm-up of each.
 */
async function comparePGlite(
  pg: NonNullable<SearchRun["live"]>,
  lite: NonNullable<SearchRun["live"]>,
): Promise<string> {
  progress("PGlite against Postgres: alternating requests");
  const rows: string[][] = [];
  let within = 0;
  for (const [name, p] of pg.paths) {
    const litePath = lite.paths.get(name);
    if (litePath === undefined) continue;
    const [pgLat, liteLat] = await alternate(
      () => pg.get(p),
      () => lite.get(litePath),
    );
    const [p50, p95, l50, l95] = [median(pgLat), percentile(pgLat, 0.95), median(liteLat), percentile(liteLat, 0.95)];
    if (l50 <= 2 * p50) within++;
    rows.push([
      name,
      ms(p50),
      ms(l50),
      ratio(l50, p50),
      ms(p95),
      ms(l95),
      ratio(l95, p95),
      l50 <= 2 * p50 ? "yes" : "NO",
    ]);
  }
  return [
    `### PGlite against Postgres at ${ASSETS.toLocaleString("en")} assets (same corpus, same queries; target: within 2x)`,
    "",
    `Both services running, sequential requests alternating between them per query (${REQUESTS} or ${CASE_SECONDS} s each, after 3 warm-up requests each); ${within} of ${rows.length} queries within 2x at p50:`,
    "",
    table(
      ["query", "Postgres p50", "PGlite p50", "p50 ratio", "Postgres p95", "PGlite p95", "p95 ratio", "within 2x"],
      rows,
    ),
  ].join("\n");
}

async function benchSearch(): Promise<string> {
  const otherAssets = Math.max(1, Math.round(ASSETS / 10));
  const runs: SearchRun[] = [];
  const fresh = (label: string) => async (): Promise<Opened> => {
    const dir = mkdtempSync(path.join(tmpdir(), `bench-mgmt-db-${label}-`));
    const db = await createBenchDatabase(label, dir);
    return {
      db: { ...db, drop: async () => (await db.drop(), rmSync(dir, { recursive: true, force: true })) },
      seedMs: null,
      keep: false,
    };
  };
  // With both databases, both services stay up after their own rows so that the PGlite/Postgres
  // ratio comes from requests alternating between them (the machine's drift hits both alike),
  // not from two runs minutes apart.
  const compare = adminUrl() !== undefined && process.env.BENCH_SKIP_PGLITE !== "1";
  let comparison: string | undefined;
  const pgRun = adminUrl()
    ? await benchSearchSetup("Postgres", fresh("search"), ASSETS, otherAssets, compare)
    : undefined;
  if (pgRun) runs.push(pgRun);
  try {
    if (process.env.BENCH_SKIP_PGLITE !== "1") {
      const saved = { b: process.env.BENCH_DATABASE_URL, d: process.env.DATABASE_URL };
      delete process.env.BENCH_DATABASE_URL;
      delete process.env.DATABASE_URL;
      try {
        const liteRun = await benchSearchSetup("PGlite", fresh("pglite"), ASSETS, otherAssets, compare);
        runs.push(liteRun);
        if (pgRun?.live && liteRun.live) {
          try {
            comparison = await comparePGlite(pgRun.live, liteRun.live);
          } finally {
            await liteRun.live.close();
          }
        }
      } finally {
        if (saved.b !== undefined) process.env.BENCH_DATABASE_URL = saved.b;
        if (saved.d !== undefined) process.env.DATABASE_URL = saved.d;
      }
    }
  } finally {
    await pgRun?.live?.close();
  }
  const keptUrl = process.env.BENCH_SEARCH_DATABASE_URL;
  if (keptUrl) {
    const large = Number(process.env.BENCH_LARGE_ASSETS ?? 1_000_000);
    const largeOther = Math.round(large / 10);
    runs.push(
      await benchSearchSetup(
        "Postgres, kept database",
        () => keptDatabase(keptUrl, large, largeOther),
        large,
        largeOther,
      ),
    );
  }
  const parts = [
    `Search and listing. Corpus: bench/search-corpus.ts (titles, tags, captions, descriptions, filenames from a 255-word vocabulary, density ~ 1/sqrt(rank); "mountains" matches ~19% of the rows, "zeppelin" one row in 8,191), generated with INSERT ... SELECT generate_series. Targets of issue 50 (at 1M): p95 <= 30 ms for two and for three words (AND), <= 40 ms for a phrase, <= 50 ms for a broad word with three facets, <= 25 ms for a prefix, <= 40 ms for the list's substring filter, and every fast query within 1.3x of its raw SQL. Targets of issue 7: p95 <= 25 ms and >= 200 req/s at 10 connections for a broad word, <= 10 ms for a rare word or typo and for the list's first page and a cursor page 50 deep (Postgres).`,
    ...runs.map((r) => r.text),
  ];
  if (comparison) parts.push(comparison);
  return parts.join("\n\n");
}

export async function benchManagement(): Promise<string> {
  const parts: string[] = [];
  if (process.env.BENCH_SKIP_UPLOAD !== "1") parts.push(await benchUploads(), await benchPhoneUploads());
  if (process.env.BENCH_SKIP_SEARCH !== "1") parts.push(await benchSearch());
  const body = parts.join("\n\n");
  // The management section on its own file too: bench/results/latest.md is rewritten by every run.
  const header = `# Management benchmark\n\n${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.platform()} ${os.release()}\n`;
  mkdirSync(path.join(__dirname, "results"), { recursive: true });
  writeFileSync(path.join(__dirname, "results", "management.md"), `${header}\n${body}\n`);
  return body;
}

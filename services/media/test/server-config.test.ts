import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import path from "node:path";
import { loadMediaConfig, mediaEnvSchema, MediaConfigError } from "../src/config";
import { startMedia } from "../src/server";
import { MemoryBlobStore } from "./support/memory-store";
import { pipelineRender } from "./support/media-server";

describe("media configuration", () => {
  it("has the documented defaults with an empty environment", () => {
    const config = loadMediaConfig({});
    expect(config).toMatchObject({
      port: 3001,
      host: "0.0.0.0",
      redis: undefined,
      cache: { memoryBytes: 256 * 1024 * 1024, ttlSeconds: 604800, maxEntryBytes: 10 * 1024 * 1024 },
      signingKey: undefined,
      limitInputPixels: 100_000_000,
      limits: { maxDimension: 8192, maxOutputPixels: 50_000_000 },
      requestTimeoutMs: 30_000,
      concurrency: 4 * availableParallelism(),
      queueLimit: 64,
      workers: 0,
      heapGrowingPercent: 300,
      logLevel: "info",
    });
    expect(config.storage.STORAGE_DRIVER).toBe("fs");
    expect(config.storage.STORAGE_DIR).toBe(path.resolve(".data", "blobs"));
  });

  it("reads every variable", () => {
    const config = loadMediaConfig({
      MEDIA_PORT: "4001",
      HOST: "127.0.0.1",
      DATA_DIR: "/tmp/media-data",
      REDIS_URL: "redis://127.0.0.1:6379/2",
      REDIS_KEY_PREFIX: "m1:",
      REDIS_COMMAND_TIMEOUT_MS: "250",
      CACHE_MEMORY_BYTES: "1048576",
      CACHE_TTL_SECONDS: "60",
      CACHE_MAX_ENTRY_BYTES: "2048",
      MEDIA_SIGNING_KEY: "0123456789abcdef0123456789abcdef0123",
      LIMIT_INPUT_PIXELS: "1000000",
      MEDIA_MAX_DIMENSION: "4096",
      MEDIA_MAX_OUTPUT_PIXELS: "2000000",
      MEDIA_MAX_MULTIPLIER: "5",
      MEDIA_MAX_NOISE_AMOUNT: "50",
      MEDIA_MAX_WAVE_AMPLITUDE: "200",
      MEDIA_MAX_WAVE_LENGTH: "900",
      MEDIA_MAX_SHARPEN: "10",
      MEDIA_REQUEST_TIMEOUT_MS: "5000",
      MEDIA_CONCURRENCY: "2",
      MEDIA_QUEUE_LIMIT: "0",
      MEDIA_WORKERS: "3",
      MEDIA_HEAP_GROWING_PERCENT: "0",
      LOG_LEVEL: "warn",
    });
    expect(config).toMatchObject({
      port: 4001,
      host: "127.0.0.1",
      redis: { url: "redis://127.0.0.1:6379/2", keyPrefix: "m1:", timeoutMs: 250 },
      cache: { memoryBytes: 1048576, ttlSeconds: 60, maxEntryBytes: 2048 },
      signingKey: "0123456789abcdef0123456789abcdef0123",
      limitInputPixels: 1_000_000,
      limits: {
        maxDimension: 4096,
        maxOutputPixels: 2_000_000,
        maxMultiplier: 5,
        maxNoiseAmount: 50,
        maxWaveAmplitude: 200,
        maxWaveLength: 900,
        maxSharpen: 10,
      },
      requestTimeoutMs: 5000,
      concurrency: 2,
      queueLimit: 0,
      workers: 3,
      heapGrowingPercent: 0,
      logLevel: "warn",
    });
    expect(config.storage.STORAGE_DIR).toBe(path.join("/tmp/media-data", "blobs"));
  });

  it("sizes the transformation slots to the machine: MEDIA_CONCURRENCY 0 (the default) is four per CPU core", () => {
    expect(loadMediaConfig({ MEDIA_CONCURRENCY: "0" }).concurrency).toBe(4 * availableParallelism());
    expect(loadMediaConfig({ MEDIA_CONCURRENCY: "" }).concurrency).toBe(4 * availableParallelism());
    expect(loadMediaConfig({ MEDIA_CONCURRENCY: "1" }).concurrency).toBe(1);
  });

  it("treats blank values as unset", () => {
    expect(loadMediaConfig({ REDIS_URL: "", MEDIA_PORT: " ", MEDIA_SIGNING_KEY: "" })).toMatchObject({
      port: 3001,
      redis: undefined,
      signingKey: undefined,
    });
  });

  it.each([
    ["MEDIA_PORT", "70000"],
    ["MEDIA_PORT", "abc"],
    ["REDIS_URL", "http://127.0.0.1:6379"],
    ["CACHE_MEMORY_BYTES", "-1"],
    ["CACHE_TTL_SECONDS", "1.5"],
    ["MEDIA_SIGNING_KEY", "short"],
    ["LIMIT_INPUT_PIXELS", "0"],
    ["MEDIA_CONCURRENCY", "-1"],
    ["MEDIA_CONCURRENCY", "1025"],
    ["MEDIA_QUEUE_LIMIT", "many"],
    ["MEDIA_REQUEST_TIMEOUT_MS", "5"],
    ["MEDIA_HEAP_GROWING_PERCENT", "-1"],
    ["MEDIA_HEAP_GROWING_PERCENT", "1001"],
    ["LOG_LEVEL", "loud"],
    ["STORAGE_DRIVER", "ftp"],
  ])("a bad %s (%s) fails naming the variable", (variable, value) => {
    expect(() => loadMediaConfig({ [variable]: value })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ [variable]: value })).toThrow(new RegExp(`${variable}: `));
  });

  it("checks the storage package's cross-field rules too", () => {
    expect(() => loadMediaConfig({ STORAGE_DRIVER: "s3" })).toThrow(/S3_BUCKET: is required when STORAGE_DRIVER=s3/);
  });

  it("lists every variable in mediaEnvSchema (for deployment manifests)", () => {
    expect(Object.keys(mediaEnvSchema.shape)).toEqual(
      expect.arrayContaining([
        "MEDIA_PORT",
        "HOST",
        "REDIS_URL",
        "CACHE_MEMORY_BYTES",
        "CACHE_TTL_SECONDS",
        "CACHE_MAX_ENTRY_BYTES",
        "MEDIA_SIGNING_KEY",
        "LIMIT_INPUT_PIXELS",
        "MEDIA_MAX_DIMENSION",
        "MEDIA_MAX_OUTPUT_PIXELS",
        "MEDIA_REQUEST_TIMEOUT_MS",
        "MEDIA_CONCURRENCY",
        "MEDIA_QUEUE_LIMIT",
        "MEDIA_WORKERS",
        "MEDIA_HEAP_GROWING_PERCENT",
        "LOG_LEVEL",
        "STORAGE_DRIVER",
        "STORAGE_DIR",
        "S3_BUCKET",
      ]),
    );
  });
});

describe("start-up with a bad environment", () => {
  it("exits 1 and names the variable", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "services/media/src/index.ts"], {
      cwd: path.resolve(__dirname, "..", "..", ".."),
      env: { ...process.env, MEDIA_PORT: "not-a-port", CACHE_TTL_SECONDS: "0" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("MEDIA_PORT: must be a port number from 0 to 65535");
    expect(run.stderr).toContain("CACHE_TTL_SECONDS: ");
    expect(run.stdout).not.toContain("listening");
  });
});

describe("startMedia", () => {
  it("listens on the configured port and host, prints nothing, closes cleanly", async () => {
    const config = loadMediaConfig({ MEDIA_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" });
    const store = new MemoryBlobStore();
    const id = await store.putFixture("astronaut.png");
    const running = await startMedia(config, { store, render: pipelineRender() });
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${running.url}/thumbnail:size=64/${id}.png`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-cache")).toBe("MISS");
    } finally {
      await running.close();
    }
    await running.close();
  });
});

import { OPERATOR_ENV, composeProblems } from "./support/compose-checks";
import { composeEnvironment, interpolate, parseYamlStrict, readRepoFile, type Json } from "./support/files";

const load = (): Json => parseYamlStrict(readRepoFile("docker-compose.yml"));
/** A deep copy to break on purpose. */
const copy = (): Json => structuredClone(load());

describe("docker-compose.yml", () => {
  test("parses as YAML and holds every piece of the production-like stack", () => {
    const compose = load();
    expect(Object.keys(compose.services).sort()).toEqual(
      expect.arrayContaining(["management", "media", "minio", "minio-init", "postgres", "redis"]),
    );
  });

  test("passes every check: images, healthchecks, depends_on conditions, env rules, URL targets, ports, shared bucket", () => {
    expect(composeProblems(load())).toEqual([]);
  });

  test("every published port is bound to the loopback interface, not to all interfaces", () => {
    const compose = load();
    const published: string[] = [];
    for (const [name, service] of Object.entries(compose.services as Record<string, Json>))
      for (const entry of service.ports ?? []) published.push(`${name} ${interpolate(String(entry))}`);
    expect(published.sort()).toEqual([
      "cdn 127.0.0.1:8080:8080",
      "jaeger 127.0.0.1:16686:16686",
      "management 127.0.0.1:3000:3000",
      "media 127.0.0.1:3001:3001",
      "minio 127.0.0.1:9000:9000",
      "minio 127.0.0.1:9001:9001",
    ]);
  });

  test("management and media run in production mode with the same S3 bucket", () => {
    const compose = load();
    const m = composeEnvironment(compose.services.management, OPERATOR_ENV);
    const media = composeEnvironment(compose.services.media, OPERATOR_ENV);
    expect(m.DATABASE_URL).toMatch(/^postgresql:\/\/media:[^@]+@postgres:5432\/media$/);
    expect(media.REDIS_URL).toBe("redis://redis:6379");
    expect([m.STORAGE_DRIVER, media.STORAGE_DRIVER]).toEqual(["s3", "s3"]);
    expect(m.S3_BUCKET).toBe(media.S3_BUCKET);
    expect(m.S3_ENDPOINT).toBe("http://minio:9000");
    expect(m.MEDIA_PUBLIC_URL).toBe("http://localhost:3001");
  });

  test("variables from a .env file reach the services (interpolation), defaults otherwise", () => {
    const compose = load();
    const vars = { ...OPERATOR_ENV, S3_BUCKET: "my-bucket", MEDIA_PUBLISHED_PORT: "8001", POSTGRES_PASSWORD: "s3cr3t" };
    const m = composeEnvironment(compose.services.management, vars);
    expect(m.S3_BUCKET).toBe("my-bucket");
    expect(m.MEDIA_PUBLIC_URL).toBe("http://localhost:8001");
    expect(m.DATABASE_URL).toBe("postgresql://media:s3cr3t@postgres:5432/media");
    expect(composeEnvironment(compose.services.postgres, vars).POSTGRES_PASSWORD).toBe("s3cr3t");
    expect(composeEnvironment(compose.services["minio-init"], vars).S3_BUCKET).toBe("my-bucket");
  });

  test("has no default JWT or purge secret: without a .env the services do not start, with one they get its values", () => {
    const compose = load();
    expect(() => composeEnvironment(compose.services.management)).toThrow(/AUTH_JWT_SECRET: set AUTH_JWT_SECRET/);
    expect(() =>
      composeEnvironment(compose.services.management, { AUTH_JWT_SECRET: OPERATOR_ENV.AUTH_JWT_SECRET }),
    ).toThrow(/MEDIA_PURGE_SECRET: set MEDIA_PURGE_SECRET/);
    expect(() => composeEnvironment(compose.services.media)).toThrow(/MEDIA_PURGE_SECRET: set MEDIA_PURGE_SECRET/);
    expect(() => composeEnvironment(compose.services.management, { ...OPERATOR_ENV, AUTH_JWT_SECRET: "" })).toThrow(
      /AUTH_JWT_SECRET/,
    );
    const m = composeEnvironment(compose.services.management, OPERATOR_ENV);
    const media = composeEnvironment(compose.services.media, OPERATOR_ENV);
    expect([m.AUTH_JWT_SECRET, m.MEDIA_PURGE_SECRET, media.MEDIA_PURGE_SECRET]).toEqual([
      OPERATOR_ENV.AUTH_JWT_SECRET,
      OPERATOR_ENV.MEDIA_PURGE_SECRET,
      OPERATOR_ENV.MEDIA_PURGE_SECRET,
    ]);
  });

  describe("the checks catch a broken file", () => {
    const cases: Array<[string, (c: Json) => void, RegExp]> = [
      [
        "a typo in a variable name",
        (c) => {
          c.services.media.environment.S3_BUKET = c.services.media.environment.S3_BUCKET;
          delete c.services.media.environment.S3_BUCKET;
        },
        /S3_BUKET: not a variable of the media service/,
      ],
      [
        "a missing production variable",
        (c) => delete c.services.management.environment.DATABASE_URL,
        /DATABASE_URL: required in production/,
      ],
      [
        "two auth key sources",
        (c) => (c.services.management.environment.AUTH_JWKS_URL = "https://idp.example.com/jwks"),
        /exactly one of AUTH_JWKS_URL/,
      ],
      [
        "an invalid value",
        (c) => (c.services.media.environment.MEDIA_CONCURRENCY = "zero"),
        /media: the service's config loader rejects it: .*MEDIA_CONCURRENCY/,
      ],
      [
        "an invalid bucket name",
        (c) => (c.services.management.environment.S3_BUCKET = "Media_Assets"),
        /config loader rejects it.*S3_BUCKET/,
      ],
      [
        "different buckets",
        (c) => (c.services.media.environment.S3_BUCKET = "other-bucket"),
        /storage differs: .*S3_BUCKET/,
      ],
      [
        "a host that is no service",
        (c) => (c.services.media.environment.REDIS_URL = "redis://cache:6379"),
        /REDIS_URL host cache is not a compose service/,
      ],
      [
        "a wrong port",
        (c) =>
          (c.services.management.environment.DATABASE_URL =
            "postgresql://media:media-dev-password@postgres:5433/media"),
        /DATABASE_URL port 5433, but postgres listens on 5432/,
      ],
      [
        "wrong database credentials",
        (c) => (c.services.postgres.environment.POSTGRES_USER = "admin"),
        /DATABASE_URL user media, postgres has admin/,
      ],
      [
        "a dependency on an unknown service",
        (c) => (c.services.media.depends_on.cache = { condition: "service_healthy" }),
        /depends_on cache, which is not a service/,
      ],
      [
        "a URL without depends_on",
        (c) => delete c.services.media.depends_on.redis,
        /media: uses redis \(REDIS_URL\) without depends_on redis/,
      ],
      [
        "service_started instead of healthy",
        (c) => (c.services.management.depends_on.postgres.condition = "service_started"),
        /depends_on postgres with condition service_started, expected service_healthy/,
      ],
      [
        "waiting for the bucket job to be healthy",
        (c) => (c.services.media.depends_on["minio-init"].condition = "service_healthy"),
        /expected service_completed_successfully/,
      ],
      ["a service without healthcheck", (c) => delete c.services.redis.healthcheck, /redis: no usable healthcheck/],
      [
        "a healthcheck on the wrong port variable",
        (c) =>
          (c.services.media.healthcheck.test = ["CMD", "node", "/app/healthcheck.cjs", "MANAGEMENT_PORT", "/readyz"]),
        /media: healthcheck reads port from MANAGEMENT_PORT/,
      ],
      [
        "an unpublished port",
        (c) => (c.services.media.ports = ["3001:3002"]),
        /media: no published port for MEDIA_PORT=3001/,
      ],
      [
        "MEDIA_PUBLIC_URL on another port",
        (c) => (c.services.management.environment.MEDIA_PUBLIC_URL = "http://localhost:3002"),
        /MEDIA_PUBLIC_URL port 3002, media is published on 3001/,
      ],
      [
        "the bucket job creating another bucket",
        (c) => (c.services["minio-init"].environment.S3_BUCKET = "nope"),
        /minio-init creates bucket nope/,
      ],
      [
        "a missing bucket script",
        (c) => (c.services["minio-init"].entrypoint = ["/bin/sh", "/init/missing.sh"]),
        /missing.sh does not exist/,
      ],
      ["an undeclared named volume", (c) => delete c.volumes["minio-data"], /named volume minio-data is not declared/],
      [
        "a wrong Postgres major",
        (c) => (c.services.postgres.image = "postgres:15-alpine"),
        /postgres: image postgres:15-alpine/,
      ],
      [
        "a Dockerfile that does not exist",
        (c) => (c.services.media.build.dockerfile = "infra/docker/Dockerfile"),
        /media: build.dockerfile infra\/docker\/Dockerfile/,
      ],
      [
        "a default JWT secret",
        (c) =>
          (c.services.management.environment.AUTH_JWT_SECRET = "${AUTH_JWT_SECRET:-dev-only-secret-0123456789abcdef}"),
        /management: AUTH_JWT_SECRET has a default/,
      ],
      [
        "a literal purge secret",
        (c) => (c.services.media.environment.MEDIA_PURGE_SECRET = "purge-secret-0123456789abcdef0123456789"),
        /media: MEDIA_PURGE_SECRET has a default/,
      ],
      [
        "no JWT secret at all",
        (c) => delete c.services.management.environment.AUTH_JWT_SECRET,
        /management: AUTH_JWT_SECRET is not passed/,
      ],
    ];
    test.each(cases)("%s", (_name, breakIt, expected) => {
      const c = copy();
      breakIt(c);
      const problems = composeProblems(c);
      expect(problems.join("\n")).toMatch(expected);
    });
  });
});

describe("compose interpolation", () => {
  test("follows the compose spec", () => {
    expect(interpolate("${A:-x}", {})).toBe("x");
    expect(interpolate("${A:-x}", { A: "" })).toBe("x");
    expect(interpolate("${A-x}", { A: "" })).toBe("");
    expect(interpolate("a$$b${B}", { B: "c" })).toBe("a$bc");
    expect(interpolate("${A:-${B:-deep}}", {})).toBe("deep");
    expect(() => interpolate("${A:?needed}", {})).toThrow("A: needed");
    expect(interpolate("${A:+set}", { A: "1" })).toBe("set");
    expect(() => interpolate("${A", {})).toThrow(/unterminated/);
  });
});

// Which purge answers the management service tries again: a server error, 408, 429 or a network
// failure, up to 4 attempts; any other 4xx (a wrong path or method, a refused secret) once. Each
// case runs against a real HTTP endpoint that counts the attempts it receives.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { ChangePropagator, isRetryable } from "../src/lifecycle/propagation";
import { freePort } from "../../../test/support/net";

const ASSET = "0b1f6a52-3c4d-4e5f-8a9b-0c1d2e3f4a5b";

interface Endpoint {
  url: string;
  attempts: Map<string, number>;
  close(): Promise<void>;
}

/** Answers /<status>/<assetId> with <status>, counting the attempts per path. */
async function statusEndpoint(): Promise<Endpoint> {
  const attempts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? "";
    attempts.set(path, (attempts.get(path) ?? 0) + 1);
    req.resume();
    res.writeHead(Number(path.split("/")[1])).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    attempts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function propagatorFor(cdnPurgeUrl: string) {
  const lines: Array<Record<string, unknown>> = [];
  const failures: string[] = [];
  const log = pino(
    { level: "info" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  const propagator = new ChangePropagator({
    mediaPurgeUrls: [],
    mediaPurgeSecret: "unused-purge-secret-0123456789abcdef",
    cdnPurgeUrl,
    log,
    // A loaded machine may answer slowly: a timeout is not what these cases are about.
    timeoutMs: 60_000,
    onFailure: (target) => failures.push(target),
  });
  return { propagator, lines, failures };
}

describe("CDN purge retries (CDN_PURGE_URL)", () => {
  let endpoint: Endpoint;
  beforeAll(async () => {
    endpoint = await statusEndpoint();
  });
  afterAll(() => endpoint.close());

  it.each([
    [200, 1, false],
    [204, 1, false],
    [400, 1, true],
    [401, 1, true],
    [403, 1, true],
    [404, 1, true],
    [405, 1, true],
    [408, 4, true],
    [429, 4, true],
    [500, 4, true],
    [502, 4, true],
    [503, 4, true],
  ])("an answer %i gets %i attempt(s)", async (status, attempts, failed) => {
    const { propagator, lines, failures } = propagatorFor(`${endpoint.url}/${status}/{assetId}`);
    await propagator.assetsChanged([ASSET]);
    expect(endpoint.attempts.get(`/${status}/${ASSET}`)).toBe(attempts);
    expect(failures).toEqual(failed ? ["cdn"] : []);
    const errors = lines.filter((l) => l.level === 50);
    if (!failed) {
      expect(errors).toEqual([]);
      return;
    }
    expect(errors).toEqual([
      expect.objectContaining({
        target: "cdn",
        url: `${endpoint.url}/${status}/${ASSET}`,
        error: `HTTP ${status}`,
        retried: attempts > 1,
      }),
    ]);
    expect(String(errors[0]!.msg)).toMatch(attempts > 1 ? /^cache purge failed/ : /^cache purge refused, not retried/);
  });

  it("retries a connection that is refused, 4 attempts", async () => {
    const port = await freePort();
    const { propagator, lines, failures } = propagatorFor(`http://127.0.0.1:${port}/purge/{assetId}`);
    await propagator.assetsChanged([ASSET]);
    expect(failures).toEqual(["cdn"]);
    expect(lines.filter((l) => l.level === 50)).toEqual([expect.objectContaining({ retried: true })]);
  });

  it("stops at the first 2xx after failures", async () => {
    let answered = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(++answered < 3 ? 503 : 200).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { propagator, failures } = propagatorFor(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/purge/{assetId}`,
      );
      await propagator.assetsChanged([ASSET]);
      expect(answered).toBe(3);
      expect(failures).toEqual([]);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("isRetryable: 5xx, 408 and 429 only", () => {
    const statuses = [400, 401, 403, 404, 405, 408, 409, 410, 413, 422, 429, 500, 501, 502, 503, 504];
    expect(statuses.filter(isRetryable)).toEqual([408, 429, 500, 501, 502, 503, 504]);
  });
});

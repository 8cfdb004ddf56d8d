/**
 * The phases of bench/miss-profile.ts and the parser that sorts `perf script` samples into them.
 */
import path from "node:path";

/**
 * Phases, tried on each frame from the innermost outwards: the first frame that matches any of
 * them decides. Service-only phases stay at zero for the floor.
 */
export const PHASES: Array<[string, RegExp]> = [
  [
    "garbage collection",
    /Heap::CollectGarbage|ScavengerCollector|Scavenger::|MinorGCJob|MarkCompact|IncrementalMarking/,
  ],
  ["sharp native: pipeline set-up and result", /sharp-linux-[^/]*\.node\)$/],
  ["sharp JS: builders, toBuffer", /sharp\/dist\//],
  ["file I/O (node:fs)", /node:fs:|node:internal\/fs\/|fs::|uv__fs_|FSReqCallback|FileHandle/],
  ["blob store (packages/storage)", /packages\/storage\/src\//],
  ["original source (pipeline/original.ts)", /media\/src\/pipeline\/original\.ts/],
  ["render (pipeline, transformations)", /media\/src\/(pipeline|transformations)\//],
  ["cache entry, ETag, memory tier", /media\/src\/cache\/|lru-cache|node:internal\/crypto/],
  ["metrics", /prom-client|media\/src\/metrics\.ts|observability\/src\/metrics\.ts/],
  ["logging", /pino|observability\/src\/(logger|redact)\.ts/],
  [
    "flight: single-flight, limiter, abort, timers",
    /single-flight\.ts|delivery\/limiter\.ts|abort_controller|event_target|node:internal\/timers|node:timers/,
  ],
  ["rendition service (delivery)", /delivery\/rendition-service\.ts/],
  [
    "request handling: hot path, route, URL, tracking",
    /services\/media\/src\/|packages\/(contracts|observability)\/src\//,
  ],
  ["floor's request handler", /bench\/http-floor\.ts/],
  // ServerResponse lives in _http_server.js too: its methods are named before the request side's file.
  [
    "HTTP response write",
    /_http_outgoing|writev|stream_base_commons|streams\/writable|node:net:|(writeHead|resOnFinish) node:_http_server/,
  ],
  ["HTTP request read and parse", /llhttp|_http_server|_http_common|_http_incoming|streams\/readable|uv__read/],
  ["promise and callback machinery", /RunMicrotasks|task_queues|PromiseFulfill|AsyncFunction|MakeCallback/],
  ["event loop (poll, wake-ups)", /epoll|uv__io_poll|uv_run|uv__async/],
];
export const OTHER = "other (V8 runtime, libc, kernel)";

export interface Profile {
  /** CPU ns of the main thread's samples per phase and frame (the innermost recognised one). */
  frames: Map<string, Map<string, number>>;
  requests: number;
  seconds: number;
  /** Main-thread CPU from /proc over the same window (cross-check of the sampled total). */
  procMs: number;
}

export const emptyProfile = (): Profile => ({ frames: new Map(), requests: 0, seconds: 0, procMs: 0 });

/** CPU ns per phase: the sum of its frames. */
export function phaseTotals(profile: Profile): Map<string, number> {
  const totals = new Map<string, number>();
  for (const [phase, frames] of profile.frames)
    totals.set(
      phase,
      [...frames.values()].reduce((a, b) => a + b, 0),
    );
  return totals;
}

/** "JS:*readInputs /work/main/services/…/rendition-service.ts:2:7378+0x1a (…so)" -> "readInputs rendition-service.ts". */
function frameName(frame: string): string {
  const symbol = frame.replace(/^[0-9a-f]+\s+/, "").replace(/\+0x[0-9a-f]+ \(.*$/, "");
  const js = /^JS:[*^~]?(\S*)\s+(\S+?)(?::\d+:\d+)?$/.exec(symbol);
  if (js) return `${js[1] || "(anonymous)"} ${path.basename(js[2]!)}`;
  return symbol.slice(0, 80);
}

/** Parses `perf script` output: one block per sample, a header line then frames, innermost first. */
export function classify(script: string, into: Profile): void {
  for (const block of script.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((l) => l.trim() !== "");
    if (lines.length === 0) continue;
    const period = Number(/\s(\d+)\s+cpu-clock/.exec(lines[0]!)?.[1] ?? 0);
    if (period === 0) continue;
    let phase = OTHER;
    let frame = lines[1] ?? "";
    outer: for (const line of lines.slice(1)) {
      for (const [name, pattern] of PHASES) {
        if (pattern.test(line.trim())) {
          phase = name;
          frame = line.trim();
          break outer;
        }
      }
    }
    let frames = into.frames.get(phase);
    if (!frames) into.frames.set(phase, (frames = new Map()));
    const key = frameName(frame.trim());
    frames.set(key, (frames.get(key) ?? 0) + period);
  }
}

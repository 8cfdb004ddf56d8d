/**
 * The media targets of issue 7, judged from one run's own measurements, so `pnpm bench media`
 * says plainly which are met instead of leaving it to whoever reads 60 ratios.
 *
 * A measurement counts only when the run could make it: a sequential HIT cell where nginx did not
 * clear the bare server by 1.25x was set by the load generator, and a paired cell whose A/A
 * calibration (two identical bare servers) lands more than CALIBRATION_TOLERANCE from 1.00x has an
 * error larger than the margins being judged. A target is **met** when every measurement it
 * names counts and reaches its minimum, **not met** when any counted one falls short, and **not
 * measured** when nothing fell short but something could not be counted: a machine that cannot
 * measure a target never reports it met.
 */

/** How far an A/A pair (identical processes) may stray from 1.00x before its cell stops counting. */
export const CALIBRATION_TOLERANCE = 0.05;

/**
 * nginx must serve at least this many times the bare server's req/s in a sequential HIT cell;
 * below it, wrk (one thread) or the loopback set the pace, not the servers.
 */
export const LOAD_BOUND_FACTOR = 1.25;

/** Issue 7's media targets: what each row judges and its minimum ratio. */
export interface Target {
  name: string;
  minimum: number;
}

export const MEDIA_TARGETS = {
  missVsSharp: { name: "MISS: service / raw sharp, every image, step and connection count", minimum: 0.95 },
  missVsIpx: { name: "MISS: service / IPX 3.1.1, every image, step and connection count", minimum: 1.0 },
  missAnswers: { name: "MISS: 2xx answers / all answers of the service, every cell (no 429, no 503)", minimum: 1.0 },
  hit: { name: "HIT (memory tier): service / bare node:http at 8, 32, 128 connections", minimum: 0.85 },
  hitP99: {
    name: "HIT p99 latency: bare node:http's / the service's at 8, 32, 128 connections (within 2x)",
    minimum: 0.5,
  },
  redis: { name: "Redis-tier HIT (aim): service / bare node:http + one GET at 8, 32 connections", minimum: 0.8 },
} satisfies Record<string, Target>;

/** How the Targets section says which cells count (from the constants above, so text and rule agree). */
export const TARGET_RULES =
  "Judged from this run's own cells (`bench/targets.ts`). " +
  `A sequential HIT cell counts only when nginx cleared the bare server by ${LOAD_BOUND_FACTOR}x (else wrk set the pace); ` +
  `a paired cell only when its A/A calibration is within 1.00x ± ${CALIBRATION_TOLERANCE.toFixed(2)}. ` +
  "NOT MEASURED: nothing counted fell short, but something could not be counted on this machine. Parts not run are not listed.";

export interface Measurement {
  /** Where it was measured, e.g. "12 MP JPEG fit c=2" or "c=32 paired per CPU second". */
  label: string;
  /** service / reference; NaN when the run could not compute it. */
  ratio: number;
  /** Why it does not count (undefined: it counts). */
  excluded?: string;
}

export type Verdict = "met" | "not met" | "not measured";

export interface Judgement {
  target: string;
  minimum: number;
  verdict: Verdict;
  counted: Measurement[];
  /** Counted measurements below the minimum, lowest first. */
  short: Measurement[];
  excluded: Measurement[];
}

/** An A/A ratio outside 1.00x ± CALIBRATION_TOLERANCE (or missing) as the reason a paired cell does not count. */
export function calibrationProblem(aa: number): string | undefined {
  if (!Number.isFinite(aa)) return "no A/A calibration";
  // The tolerance is inclusive (1e-9: 0.95 - 1 is not exactly -0.05 in binary floating point).
  return Math.abs(aa - 1) > CALIBRATION_TOLERANCE + 1e-9 ? `A/A ${aa.toFixed(2)}x` : undefined;
}

export function judge({ name: target, minimum }: Target, measurements: Measurement[]): Judgement {
  const excluded = measurements.filter((m) => m.excluded !== undefined || !Number.isFinite(m.ratio));
  const counted = measurements.filter((m) => !excluded.includes(m));
  const short = counted.filter((m) => m.ratio < minimum).sort((a, b) => a.ratio - b.ratio);
  const verdict: Verdict =
    short.length > 0 ? "not met" : excluded.length > 0 || counted.length === 0 ? "not measured" : "met";
  return { target, minimum, verdict, counted, short, excluded };
}

/** A target whose part of the run did not produce figures (it failed, or a tool is missing): not measured. */
export function unmeasured(target: Target, why: string): Judgement {
  return judge(target, [{ label: "the whole part", ratio: Number.NaN, excluded: why }]);
}

const x = (r: number) => `${r.toFixed(2)}x`;

/** One row per target: verdict, what counted, the lowest counted ratio, what fell short or did not count. */
export function targetRows(judgements: Judgement[]): string[][] {
  return judgements.map((j) => {
    const lowest = j.counted.length ? x(Math.min(...j.counted.map((m) => m.ratio))) : "-";
    const notes = [
      ...j.short.slice(0, 6).map((m) => `${m.label} ${x(m.ratio)}`),
      ...(j.short.length > 6 ? [`${j.short.length - 6} more below`] : []),
      ...j.excluded.map((m) => `not counted: ${m.label} (${m.excluded ?? "no figure"})`),
    ];
    return [
      j.target,
      `>= ${j.minimum.toFixed(2)}x`,
      j.verdict.toUpperCase(),
      `${j.counted.length - j.short.length} of ${j.counted.length + j.excluded.length}`,
      lowest,
      notes.join("; ") || "-",
    ];
  });
}

export const TARGET_HEADER = ["target", "minimum", "verdict", "at or above", "lowest counted", "below / not counted"];

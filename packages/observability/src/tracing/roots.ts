// The sampling decision of a new trace, taken before any span exists, so a request the sampler
// drops costs a few random numbers instead of a span (ids, sampler, context, attributes).
import type { TraceIdRatioSampling } from "./settings";

const words = new Uint32Array(4);
const bytes = Buffer.allocUnsafe(16);

function draw(count: number): void {
  for (let i = 0; i < count; i++) words[i] = (Math.random() * 0x100000000) >>> 0;
  // An all-zero id is invalid (the SDK's generator makes the last byte 1 then too).
  if (words[0] === 0 && words[1] === 0 && (count === 2 || (words[2] === 0 && words[3] === 0))) words[count - 1] = 1;
}

/** A random trace id whose four words XOR to `xor`: three drawn, the fourth giving that XOR. */
function drawWithXor(xor: number): void {
  draw(3);
  // All zero with a zero XOR would be the invalid id: 1 and 1 keep the XOR.
  if (xor === 0 && words[0] === 0 && words[1] === 0 && words[2] === 0) words[0] = 1;
  words[3] = (xor ^ words[0]! ^ words[1]! ^ words[2]!) >>> 0;
}

/** The last `count` words drawn, as lowercase hex (a flat string, as the exporter wants it). */
function hex(count: number): string {
  for (let i = 0; i < count; i++) bytes.writeUInt32BE(words[i]!, i * 4);
  return bytes.toString("hex", 0, count * 4);
}

/**
 * The SDK's id generator (ids as its own makes them, from Math.random), which also decides new
 * traces ahead of the SDK's sampler: a trace id whose four 32-bit words XOR below
 * TraceIdRatioBasedSampler's bound is sampled, and the SDK's next root span is given that id, so
 * its sampler decides the same.
 */
export class NewTraces {
  private readonly bound: number | undefined;
  /** The XOR of the trace id's four words {@link sampleNew} decided on; its words are drawn when needed. */
  private xor = 0;
  private pending = false;

  /** `ratio`: the root sampler's fraction ({@link TraceIdRatioSampling}); undefined: the SDK decides alone. */
  constructor(ratio: TraceIdRatioSampling) {
    this.bound = ratio === undefined ? undefined : ratio >= 1 ? 0x100000000 : Math.floor(ratio * 0xffffffff);
  }

  /**
   * Whether a new trace started now is sampled; undefined when only the SDK can tell. When false,
   * {@link droppedTraceId} is its trace id; when true, the next root span (or {@link takeTraceWords}) gets it.
   * The XOR of a uniformly random id's words is itself uniform, so it is drawn first and alone: a
   * dropped HIT, which never shows its id, costs one random number.
   */
  sampleNew(): boolean | undefined {
    const bound = this.bound;
    if (bound === undefined) return undefined;
    if (bound === 0) return false;
    this.xor = (Math.random() * 0x100000000) >>> 0;
    if (bound <= 0xffffffff && this.xor >= bound) return false;
    this.pending = true;
    return true;
  }

  /** The trace id of the new trace {@link sampleNew} just dropped. */
  droppedTraceId(): string {
    if (this.bound === 0) draw(4);
    else drawWithXor(this.xor);
    return hex(4);
  }

  /** Forgets a trace id decided by {@link sampleNew} that no span took. */
  settle(): void {
    this.pending = false;
  }

  /** Writes the sampled trace id {@link sampleNew} just decided into `target` at `offset` (four words) and takes it. */
  takeTraceWords(target: Uint32Array, offset: number): void {
    drawWithXor(this.xor);
    target[offset] = words[0]!;
    target[offset + 1] = words[1]!;
    target[offset + 2] = words[2]!;
    target[offset + 3] = words[3]!;
    this.pending = false;
  }

  /** Draws a new span id into `target` at `offset` (two words). */
  drawSpanWords(target: Uint32Array, offset: number): void {
    draw(2);
    target[offset] = words[0]!;
    target[offset + 1] = words[1]!;
  }

  generateTraceId(): string {
    if (this.pending) {
      this.pending = false;
      drawWithXor(this.xor);
      return hex(4);
    }
    draw(4);
    return hex(4);
  }

  generateSpanId(): string {
    draw(2);
    return hex(2);
  }
}

/** Words as lowercase hex: a trace id (four words) or a span id (two) kept as words. */
export function wordsHex(source: Uint32Array, offset: number, count: 2 | 4): string {
  for (let i = 0; i < count; i++) bytes.writeUInt32BE(source[offset + i]!, i * 4);
  return bytes.toString("hex", 0, count * 4);
}

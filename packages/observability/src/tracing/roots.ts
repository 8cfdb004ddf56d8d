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
  private next: string | undefined;

  /** `ratio`: the root sampler's fraction ({@link TraceIdRatioSampling}); undefined: the SDK decides alone. */
  constructor(ratio: TraceIdRatioSampling) {
    this.bound = ratio === undefined ? undefined : ratio >= 1 ? 0x100000000 : Math.floor(ratio * 0xffffffff);
  }

  /**
   * Whether a new trace started now is sampled; undefined when only the SDK can tell. When false,
   * {@link droppedTraceId} is its trace id.
   */
  sampleNew(): boolean | undefined {
    const bound = this.bound;
    if (bound === undefined || bound > 0xffffffff) return bound === undefined ? undefined : true;
    if (bound === 0) return false;
    draw(4);
    if ((words[0]! ^ words[1]! ^ words[2]! ^ words[3]!) >>> 0 >= bound) return false;
    this.next = hex(4);
    return true;
  }

  /** The trace id of the new trace {@link sampleNew} just dropped. */
  droppedTraceId(): string {
    if (this.bound === 0) draw(4);
    return hex(4);
  }

  /** Forgets a trace id drawn by {@link sampleNew} that no span took. */
  settle(): void {
    this.next = undefined;
  }

  generateTraceId(): string {
    const id = this.next;
    if (id !== undefined) {
      this.next = undefined;
      return id;
    }
    draw(4);
    return hex(4);
  }

  generateSpanId(): string {
    draw(2);
    return hex(2);
  }
}

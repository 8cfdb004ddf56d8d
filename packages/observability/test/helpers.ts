import { Writable } from "node:stream";

/** A pino destination that keeps every line (raw and parsed). */
export function captureStream(): { stream: Writable; raw: () => string; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const raw = () => chunks.join("");
  return {
    stream,
    raw,
    lines: () =>
      raw()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

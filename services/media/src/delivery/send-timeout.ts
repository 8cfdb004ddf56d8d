import type { ServerResponse } from "node:http";

/**
 * Bounds how long a response may take to reach its client once its body is handed over
 * (MEDIA_SEND_TIMEOUT_MS): a client that reads slowly or not at all is disconnected then, and
 * the body it pinned in the socket's buffers is released. Call right after `res.end(body)`.
 * A body the kernel took at once (every small result) arms nothing.
 */
export function sendTimeout(ms: number): (res: ServerResponse) => void {
  return (res) => {
    if (res.writableLength === 0 || res.writableFinished) return;
    const timer = setTimeout(() => {
      if (!res.writableFinished) res.destroy();
    }, ms);
    timer.unref();
    res.once("close", () => clearTimeout(timer));
  };
}

import type { ServerResponse } from "node:http";
import { PROBLEM_CONTENT_TYPE, type ProblemError } from "@media-platform/contracts";

/**
 * The problem type is contracts' ProblemError. Every problem the media service sends carries
 * `Cache-Control: no-store`: errors are never cached, neither by the service nor by a CDN.
 */
export { ProblemError, problemType, type FieldError } from "@media-platform/contracts";

/** Writes a problem with the bare node:http API (used by the hot path and the Express app alike). */
export function writeProblem(res: ServerResponse, problem: ProblemError, instance?: string, head = false): void {
  const body = JSON.stringify(problem.toBody(instance));
  const headers: Record<string, string | number> = {
    ...problem.options.headers,
    "Content-Type": PROBLEM_CONTENT_TYPE,
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-store",
  };
  res.writeHead(problem.status, headers);
  res.end(head ? undefined : body);
}

/** Strips the query string: problems name the path, never echo a signature. */
export const instanceOf = (url: string | undefined): string => (url ?? "/").split("?", 1)[0]!;

import { setFlagsFromString } from "node:v8";

/**
 * Sets how far V8's old generation may grow past its live size before the next full collection
 * (V8's --heap-growing-percent; 0 leaves V8's own heuristics alone). Every MISS hands V8 a
 * result buffer of up to megabytes (external memory); under V8's own heuristics the old
 * generation's limit then stays a few MB above the live heap, and full collections of the whole
 * heap ran several times a second under MISS load, most of the CPU the service spent per MISS
 * beyond a bare HTTP server doing the same sharp work (README, Media performance). V8 reads the
 * factor whenever it sets a new limit, so setting it after start-up applies from the next
 * collection on. Process-wide: called by the service's entry point, never by startMedia.
 */
export function configureHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}

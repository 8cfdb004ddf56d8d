import { nativeRequire as loadResolved } from "@media-platform/runtime";

/** runtime's nativeRequire for a package management depends on (resolved from here). */
export function nativeRequire<T>(id: string): T {
  return loadResolved<T>(require.resolve(id));
}

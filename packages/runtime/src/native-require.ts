import nodeModule from "node:module";

type ModuleWithLoad = typeof nodeModule & { _load?: (request: string, parent: null, isMain: boolean) => unknown };

/**
 * Loads a module (give its resolved path: `require.resolve(id)` in the package that depends on
 * it) with Node's own CommonJS loader, bypassing jest's module sandbox (whose `createRequire` is
 * its own). Needed for packages that use dynamic `import()` from CommonJS (PGlite loads Node
 * built-ins that way) or that are or depend on ESM-only packages (thumbhash; jwks-rsa -> jose),
 * loaded through Node >= 20.19's require(esm). Outside jest this is plain `require`.
 */
export function nativeRequire<T>(resolved: string): T {
  const M = ((nodeModule as { Module?: ModuleWithLoad }).Module ?? nodeModule) as ModuleWithLoad;
  if (typeof M._load === "function") return M._load(resolved, null, false) as T;
  return nodeModule.createRequire(__filename)(resolved) as T;
}

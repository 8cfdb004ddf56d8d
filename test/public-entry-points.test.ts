import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/**
 * bench/ and scripts/ use the services through their declared public entry points (the
 * package.json "exports" of @media-platform/media and @media-platform/management), never a path
 * inside services/<name>/src; and each entry point is one file that only re-exports.
 */
const ROOT = path.resolve(__dirname, "..");
const SERVICES = ["media", "management"] as const;

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : tsFilesUnder(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

/** Every module specifier of a file: imports, re-exports, require() and import(). */
function specifiersOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The declared "exports" subpaths of each service package, by package name. */
function declaredEntries(): Map<string, { dir: string; exports: Record<string, string> }> {
  const entries = new Map<string, { dir: string; exports: Record<string, string> }>();
  for (const service of SERVICES) {
    const dir = path.join(ROOT, "services", service);
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
      name: string;
      exports?: Record<string, string>;
    };
    entries.set(pkg.name, { dir, exports: pkg.exports ?? {} });
  }
  return entries;
}

/**
 * What is wrong with one import of `file` (absolute path), or undefined: a relative path that
 * lands inside services/<name>/src, or a service package subpath its "exports" does not declare.
 */
function deepImportProblem(
  file: string,
  specifier: string,
  entries: ReturnType<typeof declaredEntries>,
): string | undefined {
  const where = path.relative(ROOT, file);
  if (specifier.startsWith(".")) {
    const target = path
      .relative(ROOT, path.resolve(path.dirname(file), specifier))
      .split(path.sep)
      .join("/");
    if (/^services\/[^/]+\/src(\/|$)/.test(target)) return `${where}: "${specifier}" reaches into ${target}`;
    return undefined;
  }
  for (const [name, { exports }] of entries) {
    if (specifier !== name && !specifier.startsWith(`${name}/`)) continue;
    const subpath = specifier === name ? "." : `./${specifier.slice(name.length + 1)}`;
    if (!(subpath in exports)) return `${where}: "${specifier}" is not an entry point of ${name}`;
  }
  return undefined;
}

function deepImports(files: string[], entries = declaredEntries()): string[] {
  return files.flatMap((file) =>
    specifiersOf(readFileSync(file, "utf8"))
      .map((specifier) => deepImportProblem(file, specifier, entries))
      .filter((problem): problem is string => problem !== undefined),
  );
}

describe("services' public entry points", () => {
  it("are the only way bench/ and scripts/ reach the services", () => {
    const files = [...tsFilesUnder(path.join(ROOT, "bench")), ...tsFilesUnder(path.join(ROOT, "scripts"))];
    expect(files.length).toBeGreaterThan(20);
    expect(deepImports(files)).toEqual([]);
  });

  it("finds an import into a service's src/ when there is one (the check itself)", () => {
    const entries = declaredEntries();
    const bench = path.join(ROOT, "bench", "diagnostics", "example.ts");
    const problems = [
      "../../services/media/src/render/raw",
      "../../services/management/src",
      "@media-platform/media/src/render/raw",
      "@media-platform/management/render",
      "@media-platform/media/render",
      "@media-platform/management/database",
      "@media-platform/contracts",
      "../harness",
      "../../services/media/test/support/golden",
    ].map((specifier) => deepImportProblem(bench, specifier, entries));
    expect(problems).toEqual([
      'bench/diagnostics/example.ts: "../../services/media/src/render/raw" reaches into services/media/src/render/raw',
      'bench/diagnostics/example.ts: "../../services/management/src" reaches into services/management/src',
      'bench/diagnostics/example.ts: "@media-platform/media/src/render/raw" is not an entry point of @media-platform/media',
      'bench/diagnostics/example.ts: "@media-platform/management/render" is not an entry point of @media-platform/management',
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(
      specifiersOf('import a from "x";\nexport { b } from "y";\nconst c = require("z");\nvoid import("w");'),
    ).toEqual(["x", "y", "z", "w"]);
  });

  it("are each one existing file that only re-exports", () => {
    const files = [...declaredEntries().values()].flatMap(({ dir, exports }) =>
      Object.values(exports).map((target) => path.join(dir, target)),
    );
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) {
      expect(existsSync(file)).toBe(true);
      const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022);
      const notReExports = source.statements.filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier));
      expect(notReExports.map((s) => `${path.relative(ROOT, file)}: ${s.getText(source)}`)).toEqual([]);
    }
  });
});

// "Every environment variable the services read is set": the deployment files are checked
// against the services' env schemas; this checks that the schemas are the whole story, i.e. no
// source file of a service (or of a workspace package it depends on) reads a variable past them.
import fs from "node:fs";
import path from "node:path";
import { RUNTIME_VARIABLES, SERVICES, type ServiceName } from "./support/env-rules";
import { readRepoFile, repoPath } from "./support/files";

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    // Generated code and test-only helpers (e.g. packages/storage/src/testing) are not the service.
    if (entry.isDirectory()) {
      if (!["generated", "testing", "node_modules"].includes(entry.name)) out.push(...sourceFiles(p));
    } else if (/\.(ts|cts|mts|js|cjs|mjs)$/.test(entry.name) && !/\.test\./.test(entry.name)) out.push(p);
  }
  return out;
}

/** Variables read as process.env.X / process.env["X"] / destructured from process.env. */
export function variablesRead(source: string): string[] {
  const names = new Set<string>();
  for (const m of source.matchAll(
    /process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*["'`]([A-Za-z_][A-Za-z0-9_]*)["'`]\s*\])/g,
  ))
    names.add(m[1] ?? m[2]);
  for (const m of source.matchAll(/\{([^}]*)\}\s*=\s*process\.env\b/g)) {
    for (const part of m[1].split(",")) {
      const name = part.split(":")[0].trim();
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) names.add(name);
    }
  }
  return [...names].sort();
}

function workspaceDeps(service: ServiceName): string[] {
  const pkg = JSON.parse(readRepoFile(`services/${service}/package.json`)) as { dependencies?: Record<string, string> };
  const dirs: string[] = [];
  for (const [name, spec] of Object.entries(pkg.dependencies ?? {})) {
    if (!spec.startsWith("workspace:")) continue;
    const dir = name.replace(/^@media-platform\//, "packages/");
    if (fs.existsSync(repoPath(dir))) dirs.push(dir);
  }
  return dirs;
}

describe.each(["management", "media"] as ServiceName[])(
  "%s reads no environment variable outside its env schema",
  (service) => {
    test("in its own source and in the workspace packages it depends on", () => {
      const known = new Set<string>([...SERVICES[service].schemaKeys, ...RUNTIME_VARIABLES]);
      const offenders: string[] = [];
      for (const dir of [`services/${service}/src`, ...workspaceDeps(service).map((d) => `${d}/src`)]) {
        for (const file of sourceFiles(repoPath(dir))) {
          for (const v of variablesRead(fs.readFileSync(file, "utf8"))) {
            if (!known.has(v)) offenders.push(`${path.relative(repoPath(), file)}: ${v}`);
          }
        }
      }
      expect(offenders).toEqual([]);
    });
  },
);

test("the scanner finds the usual ways of reading a variable", () => {
  expect(
    variablesRead('const a = process.env.FOO; const b = process.env["BAR"]; const { BAZ, QUX: q } = process.env;'),
  ).toEqual(["BAR", "BAZ", "FOO", "QUX"]);
});

/** Variables a file reads as `<anything>.env.X` too (a CLI's injected `io.env`), besides process.env. */
function variablesReadAnyEnv(source: string): string[] {
  const names = new Set(variablesRead(source));
  for (const m of source.matchAll(/\.env\.([A-Z][A-Z0-9_]*)\b/g)) names.add(m[1]);
  return [...names];
}

describe("docs/configuration.md", () => {
  const documented = [...readRepoFile("docs/configuration.md").matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]);
  const read = new Map<string, string>();
  for (const dir of ["services/management/src", "services/media/src", "scripts"]) {
    for (const file of sourceFiles(repoPath(dir))) {
      for (const v of variablesReadAnyEnv(fs.readFileSync(file, "utf8"))) read.set(v, path.relative(repoPath(), file));
    }
  }
  for (const pkg of fs.readdirSync(repoPath("packages"))) {
    for (const file of sourceFiles(repoPath("packages", pkg, "src"))) {
      for (const v of variablesReadAnyEnv(fs.readFileSync(file, "utf8"))) read.set(v, path.relative(repoPath(), file));
    }
  }
  const schemaKeys = new Set([...SERVICES.management.schemaKeys, ...SERVICES.media.schemaKeys]);

  test("names every variable the services' schemas define and the code reads", () => {
    const missing = [...schemaKeys, ...read.keys(), ...RUNTIME_VARIABLES].filter((v) => !documented.includes(v));
    expect([...new Set(missing)].map((v) => `${v} (${read.get(v) ?? "env schema"})`)).toEqual([]);
  });

  test("names no other variable", () => {
    const known = new Set<string>([...schemaKeys, ...read.keys(), ...RUNTIME_VARIABLES]);
    expect(documented.filter((v) => !known.has(v))).toEqual([]);
  });

  test("the scan sees a CLI's injected environment", () => {
    expect(variablesReadAnyEnv("const t = io.env.MEDIA_PLATFORM_TOKEN;")).toContain("MEDIA_PLATFORM_TOKEN");
    expect(documented).toContain("MEDIA_PLATFORM_TOKEN");
  });
});

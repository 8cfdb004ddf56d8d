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

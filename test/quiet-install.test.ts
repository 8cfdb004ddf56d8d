// A fresh clone installs without a warning: `pnpm install --frozen-lockfile` of the project's
// manifests into an empty folder (offline, from the store the suite's own install filled) prints
// no warning and no "Ignored build scripts" box, runs the install scripts the project needs and
// no other; and npm, which reads the project's .npmrc for every `npx`, finds no pnpm-only key.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { runCommand } from "./support/run-command";

const ROOT = path.resolve(__dirname, "..");
const workspace = parse(readFileSync(path.join(ROOT, "pnpm-workspace.yaml"), "utf8")) as {
  packages: string[];
  onlyBuiltDependencies: string[];
  ignoredBuiltDependencies: string[];
  autoInstallPeers: boolean;
  shellEmulator: boolean;
};

/** What `pnpm install` reads: the manifests, the lockfile, the patches and the postinstall's inputs. */
function copyManifests(to: string): void {
  for (const entry of [
    "package.json",
    "pnpm-workspace.yaml",
    "pnpm-lock.yaml",
    "patches",
    "prisma",
    "prisma.config.ts",
  ]) {
    cpSync(path.join(ROOT, entry), path.join(to, entry), { recursive: true });
  }
  for (const pattern of workspace.packages) {
    const parent = pattern.replace(/\/\*$/, "");
    for (const name of readdirSync(path.join(ROOT, parent))) {
      const manifest = path.join(parent, name, "package.json");
      if (!existsSync(path.join(ROOT, manifest))) continue;
      mkdirSync(path.join(to, parent, name), { recursive: true });
      cpSync(path.join(ROOT, manifest), path.join(to, manifest));
    }
  }
}

/** The environment without what `pnpm exec jest` adds (npm_config_*), as a fresh shell has it. */
const withoutNpmVariables = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

describe("a quiet install", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "quiet-install-"));
    copyManifests(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("pnpm settings live in pnpm-workspace.yaml, none in an .npmrc npm would warn about", async () => {
    expect(existsSync(path.join(ROOT, ".npmrc"))).toBe(false);
    expect([workspace.autoInstallPeers, workspace.shellEmulator]).toEqual([true, true]);
    const npm = await runCommand("npm", ["config", "get", "fund"], { cwd: ROOT, env: withoutNpmVariables() });
    expect({ code: npm.code, stderr: npm.stderr }).toEqual({ code: 0, stderr: "" });
  });

  it("pnpm install --frozen-lockfile into an empty folder: exit 0, no warning, no ignored-scripts box", async () => {
    const install = await runCommand("pnpm", ["install", "--frozen-lockfile", "--offline"], {
      cwd: dir,
      env: withoutNpmVariables(),
    });
    const output = install.stdout + install.stderr;
    expect({ code: install.code, output }).toEqual({ code: 0, output: expect.stringContaining("Done in") });
    expect(output).not.toMatch(/WARN|Warning|Ignored build scripts|approve-builds|deprecated/i);
    // Every install script is decided: approved (run) or declared not needed; none waits for approval.
    const modules = parse(readFileSync(path.join(dir, "node_modules", ".modules.yaml"), "utf8")) as {
      ignoredBuilds?: string[];
    };
    expect(modules.ignoredBuilds ?? []).toEqual([]);
    expect(workspace.onlyBuiltDependencies).toEqual(expect.arrayContaining(["sharp", "esbuild", "prisma"]));
    expect(workspace.ignoredBuiltDependencies.sort()).toEqual(["@parcel/watcher", "@scarf/scarf", "core-js", "protobufjs"]);
  }, 180_000);
});

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConfigError } from "@media-platform/runtime";
import { embeddedSharedSecret, MIN_SECRET_BYTES, readSecretFile } from "../src";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "shared-secret-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("embeddedSharedSecret", () => {
  it("creates a secret of at least 32 bytes, mode 0600, and reads the same one back; no temporary file is left", () => {
    const first = embeddedSharedSecret(dir, "purge-secret");
    expect(Buffer.byteLength(first)).toBeGreaterThanOrEqual(MIN_SECRET_BYTES);
    expect(fs.statSync(path.join(dir, "purge-secret")).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(dir, "purge-secret"), "utf8")).toBe(`${first}\n`);
    expect(embeddedSharedSecret(dir, "purge-secret")).toBe(first);
    expect(fs.readdirSync(dir)).toEqual(["purge-secret"]);
  });

  it("even when asked for fewer bytes, never generates a secret under 32 bytes", () => {
    expect(Buffer.byteLength(embeddedSharedSecret(dir, "s", 4))).toBeGreaterThanOrEqual(MIN_SECRET_BYTES);
  });

  it.each([
    ["a 0-byte file", ""],
    ["a file of whitespace", " \n"],
  ])("replaces %s (a first start killed mid-write) with a fresh secret", (_name, content) => {
    fs.writeFileSync(path.join(dir, "auth-secret"), content, { mode: 0o600 });
    const secret = embeddedSharedSecret(dir, "auth-secret", 48);
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(64);
    expect(fs.readFileSync(path.join(dir, "auth-secret"), "utf8").trim()).toBe(secret);
  });

  it("refuses a non-empty secret shorter than 32 bytes with a ConfigError naming the file", () => {
    const file = path.join(dir, "auth-secret");
    fs.writeFileSync(file, "x".repeat(31));
    expect(() => embeddedSharedSecret(dir, "auth-secret")).toThrow(ConfigError);
    expect(() => embeddedSharedSecret(dir, "auth-secret")).toThrow(file);
    expect(() => readSecretFile(file)).toThrow(/shorter than 32 bytes/);
    expect(fs.readFileSync(file, "utf8")).toBe("x".repeat(31));
    fs.writeFileSync(file, "x".repeat(32));
    expect(embeddedSharedSecret(dir, "auth-secret")).toBe("x".repeat(32));
  });

  it("readSecretFile: null when absent, never creates", () => {
    expect(readSecretFile(path.join(dir, "none"))).toBeNull();
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

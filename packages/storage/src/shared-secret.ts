import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "@media-platform/runtime";
import { z } from "zod";

/**
 * Shortest secret accepted for signing or shared authentication, in bytes (HMAC-SHA256 key size),
 * by both services: AUTH_JWT_SECRET, MEDIA_SIGNING_KEY, MEDIA_PURGE_SECRET, WEBHOOK_SECRET (its
 * decoded bytes) and the generated secret files.
 */
export const MIN_SECRET_BYTES = 32;
/** The refusal of a shorter secret; the config loader names the variable before it. */
export const SECRET_TOO_SHORT = `must be at least ${MIN_SECRET_BYTES} bytes`;

/** Whether `secret` holds at least MIN_SECRET_BYTES bytes (UTF-8). */
export const isLongEnoughSecret = (secret: string): boolean => Buffer.byteLength(secret, "utf8") >= MIN_SECRET_BYTES;

/** An optional secret in the environment: blank is unset, shorter than MIN_SECRET_BYTES is refused. */
export const secretEnvField = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? undefined : v))
    .refine((v) => v === undefined || isLongEnoughSecret(v), SECRET_TOO_SHORT);

/**
 * Reads (or creates on first start) a random secret in a file of the embedded data folder, mode
 * 0600. Both services of an embedded installation share DATA_DIR, so both find the same value
 * (the media purge secret, when MEDIA_PURGE_SECRET is not set).
 *
 * An empty file (a first start killed mid-write, or a full disk) is replaced by a fresh secret; a
 * non-empty secret shorter than MIN_SECRET_BYTES is refused with a ConfigError naming the file,
 * since a short key would still sign and verify.
 */
export function embeddedSharedSecret(dataDir: string, fileName: string, bytes = 32): string {
  const file = path.join(dataDir, fileName);
  const existing = readSecretFile(file);
  if (existing !== null && existing !== "") return existing;
  fs.mkdirSync(dataDir, { recursive: true });
  if (existing === "") fs.rmSync(file, { force: true });
  const secret = randomBytes(Math.max(bytes, MIN_SECRET_BYTES)).toString("base64url");
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    // Written in full and synced under a temporary name, then linked into place: the secret file
    // is either absent or complete, and link (unlike rename) refuses to replace a file, so of two
    // processes starting together the loser reads the winner's secret.
    const fd = fs.openSync(tmp, "wx", 0o600);
    try {
      fs.writeSync(fd, `${secret}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.linkSync(tmp, file);
    syncDirectory(dataDir);
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const winner = readSecretFile(file);
    if (!winner) throw new ConfigError([{ variable: file, message: "secret file is empty" }]);
    return winner;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Reads an existing secret file, without creating it: null when absent, "" when empty. Throws a
 * ConfigError naming the file when the secret is shorter than MIN_SECRET_BYTES.
 */
export function readSecretFile(file: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8").trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  if (text !== "" && Buffer.byteLength(text, "utf8") < MIN_SECRET_BYTES)
    throw new ConfigError([
      {
        variable: file,
        message: `secret is shorter than ${MIN_SECRET_BYTES} bytes; replace it with a longer one or delete the file to generate one`,
      },
    ]);
  return text;
}

/** Makes the new directory entry durable (best effort: not every platform can open a directory). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Windows cannot fsync a directory; the file's own fsync already holds the bytes.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

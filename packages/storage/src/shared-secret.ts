import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Reads (or creates on first start) a random secret in a file of the embedded data folder, mode
 * 0600. Both services of an embedded installation share DATA_DIR, so both find the same value
 * (the media purge secret, when MEDIA_PURGE_SECRET is not set).
 */
export function embeddedSharedSecret(dataDir: string, fileName: string, bytes = 32): string {
  const file = path.join(dataDir, fileName);
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(bytes).toString("base64url");
  try {
    // "wx": two processes starting together cannot both write; the loser reads the winner's.
    fs.writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return fs.readFileSync(file, "utf8").trim();
    throw err;
  }
}

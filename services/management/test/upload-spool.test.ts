import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultUploadSettings, uploadMiddleware } from "../src/assets/upload";

describe("upload spool", () => {
  it("a spool folder it creates is private to the service's user (0700)", () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), "spool-mode-"));
    try {
      const spoolDir = path.join(parent, "uploads");
      uploadMiddleware(1024, { ...defaultUploadSettings(), spoolDir });
      expect(fs.statSync(spoolDir).mode & 0o777).toBe(0o700);
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

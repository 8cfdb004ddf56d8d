import { readFileSync } from "node:fs";
import path from "node:path";
import { readmeWithConfig } from "../../../scripts/config-doc";

describe("README configuration tables", () => {
  it("match the services' env schemas (run `pnpm docs:config`)", () => {
    const readme = readFileSync(path.resolve(__dirname, "../../../README.md"), "utf8");
    expect(readme).toBe(readmeWithConfig(readme));
    for (const variable of ["DATABASE_URL", "REDIS_URL", "MAX_UPLOAD_BYTES", "MEDIA_SIGNING_KEY", "S3_BUCKET"]) {
      expect(readme).toContain(`| \`${variable}\` |`);
    }
  });
});

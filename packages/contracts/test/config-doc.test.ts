import { readFileSync } from "node:fs";
import { CONFIG_DOC, renderConfigDoc } from "../../../scripts/config-doc";

describe("docs/configuration.md", () => {
  it("matches the services' env schemas (run `pnpm docs:config`)", () => {
    const page = readFileSync(CONFIG_DOC, "utf8");
    expect(page).toBe(renderConfigDoc());
    for (const variable of ["DATABASE_URL", "REDIS_URL", "MAX_UPLOAD_BYTES", "MEDIA_SIGNING_KEY", "S3_BUCKET"]) {
      expect(page).toContain(`| \`${variable}\` |`);
    }
    expect(page).toContain(
      "| `PGLITE_DIR` | - | PGlite data folder when DATABASE_URL is unset (default &lt;DATA_DIR>/pg) |",
    );
  });
});

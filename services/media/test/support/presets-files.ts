import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A folder of presets files for one test file: `write` puts `text` in `name` and returns its path. */
export function presetsFolder(prefix: string): { dir: string; write(name: string, text: string): string } {
  const dir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
  return {
    dir,
    write(name, text) {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    },
  };
}

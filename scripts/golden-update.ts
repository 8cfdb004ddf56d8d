/**
 * `pnpm golden:update`: renders the output-drift guard's golden set again with the installed sharp
 * and libvips and rewrites services/media/test/golden/renditions.json (budgets edited by hand are
 * kept). Run it on purpose, after an upgrade whose changes were looked at: the diff of the file
 * shows which outputs changed, and the summary below by how much.
 */
import { existsSync, writeFileSync } from "node:fs";
import {
  driftOf,
  formatGoldenSet,
  GOLDEN_FILE,
  readGoldenSet,
  renderGoldenSet,
} from "../services/media/test/support/golden";

async function main(): Promise<void> {
  const previous = existsSync(GOLDEN_FILE) ? readGoldenSet() : undefined;
  const current = await renderGoldenSet(previous);
  if (previous) {
    const changed = Object.keys(current.outputs).filter(
      (key) => previous.outputs[key]?.sha256 !== current.outputs[key]!.sha256,
    );
    const beyond = driftOf(previous, current);
    console.log(
      `renderer: ${previous.renderer === current.renderer ? "unchanged" : `${previous.renderer} -> ${current.renderer}`}`,
    );
    console.log(
      `${changed.length} of ${Object.keys(current.outputs).length} outputs changed, ${beyond.length} beyond their budget`,
    );
    for (const d of beyond) console.log(`  ${d.key}: ${d.reasons.join("; ")}`);
  }
  writeFileSync(GOLDEN_FILE, formatGoldenSet(current));
  console.log(`wrote ${GOLDEN_FILE}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

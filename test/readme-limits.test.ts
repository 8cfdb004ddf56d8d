// The README's "Security and limits" table lists every limit of docs/security.md (upload and
// media limits) with the same setting and default, so the front page never drifts from the guide.
import { readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..");

type Row = [limit: string, setting: string, defaultValue: string];

/** The rows (first three cells) of the tables under `heading`, up to the next `## `. */
function tableRows(markdown: string, heading: string): Row[] {
  const start = markdown.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`no section ${heading}`);
  const end = markdown.indexOf("\n## ", start + heading.length);
  return markdown
    .slice(start, end < 0 ? undefined : end)
    .split("\n")
    .filter((line) => line.startsWith("|") && !/^\|\s*(limit|-)/.test(line))
    .map((line) => {
      const cells = line.slice(1, -1).split("|").map((cell) => cell.trim());
      return [cells[0]!, cells[1]!, cells[2]!];
    });
}

it("lists every limit of docs/security.md with its setting and default", () => {
  const security = readFileSync(path.join(ROOT, "docs/security.md"), "utf8");
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const expected = [
    ...tableRows(security, "## Upload limits (management)"),
    ...tableRows(security, "## Media limits"),
  ];
  expect(expected.length).toBeGreaterThan(30);
  expect(tableRows(readme, "## Security and limits")).toEqual(expected);
});

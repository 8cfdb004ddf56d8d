// The docs' error tables are generated from the services' problem tables (`pnpm docs:problems`):
// a status, a problem type or a reason changed in the code and not on the page fails here.
import {
  PROBLEM_SECTIONS,
  readPage,
  renderProblemTable,
  withProblemTable,
  type ProblemsSection,
} from "../scripts/problems-doc";

const section = (name: string): ProblemsSection => PROBLEM_SECTIONS.find((s) => s.name === name)!;
const rowsOf = (name: string) => renderProblemTable(section(name).table).split("\n").slice(2);

describe("docs error tables", () => {
  it.each(PROBLEM_SECTIONS.map((s) => [s.page, s] as const))(
    "%s holds its service's table as generated (run `pnpm docs:problems`)",
    (_page, s) => {
      const page = readPage(s);
      expect(page).toBe(withProblemTable(page, s));
    },
  );

  it("every problem says when a client gets it", () => {
    for (const s of PROBLEM_SECTIONS) {
      for (const [code, spec] of Object.entries(s.table)) {
        expect([s.name, code, spec.when.trim().length > 10, /[.|]$/.test(spec.when)]).toEqual([
          s.name,
          code,
          true,
          false,
        ]);
      }
    }
  });

  it("management: the 422 row names the metadata rewrite, the 503 row the per-workspace upload cap", () => {
    const rows = rowsOf("management");
    expect(rows.find((r) => r.startsWith("| 422 | `metadata-removal-failed` |"))).toMatch(
      /GPS position and serial numbers could not be removed/,
    );
    expect(rows.find((r) => r.startsWith("| 503 + `Retry-After` | `service-unavailable` |"))).toMatch(
      /`MAX_CONCURRENT_UPLOADS` .*`MAX_CONCURRENT_UPLOADS_PER_WORKSPACE`/,
    );
    // A 503 that carries no Retry-After gets a row of its own.
    expect(rows.find((r) => r.startsWith("| 503 | `service-unavailable` |"))).toMatch(/missing from the blob store/);
  });

  it("one row per status and type in status order; 499 (a client that left) is never listed", () => {
    const rows = rowsOf("media");
    const statuses = rows.map((r) => Number(/^\| (\d+)/.exec(r)![1]));
    expect(statuses).toEqual([...statuses].sort((a, b) => a - b));
    expect(statuses).not.toContain(499);
    expect(rows.filter((r) => r.includes("`asset-not-found`"))).toEqual([
      "| 404 | `asset-not-found` | an asset that does not exist or is trashed; an overlay asset of another workspace; an asset id that is not a UUID |",
    ]);
  });

  it("refuses a page without its markers", () => {
    expect(() => withProblemTable("# page\n", section("media"))).toThrow(/problems:media:start/);
  });
});

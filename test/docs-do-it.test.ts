// Every page of docs/ answers its task first: its first section is "Do it". Its marked commands
// belong to a group the docs tests run (docs-tasks, docs-delivery, docs-production).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT, docsBlocks } from "./support/docs-commands";

const pages = readdirSync(path.join(REPO_ROOT, "docs")).filter((f) => f.endsWith(".md"));

describe("docs pages", () => {
  it.each(pages)("%s opens with a Do it section", (page) => {
    const text = readFileSync(path.join(REPO_ROOT, "docs", page), "utf8");
    expect(/^## (.+)$/m.exec(text)?.[1]).toBe("Do it");
  });

  it("every marked block belongs to a group a docs test runs, each group with its server", () => {
    const blocks = docsBlocks();
    const groups = [...new Set(blocks.map((b) => b.group))].sort();
    expect(groups).toEqual(["embedded", "presets", "production", "signing"]);
    for (const group of groups) expect(blocks.some((b) => b.group === group && b.server)).toBe(true);
    // The pages whose commands run against the embedded start.
    expect(blocks.filter((b) => b.group === "embedded" && !b.server).map((b) => b.page)).toEqual([
      "docs/decisions.md",
      "docs/getting-started.md",
      "docs/lifecycle-and-webhooks.md",
      "docs/management-api.md",
      "docs/media-urls.md",
      "docs/operations.md",
      "docs/search.md",
      "docs/security.md",
      "docs/upload-transports.md",
    ]);
  });

  it("no marked command pipes curl into a reader that stops early (curl then fails: 23, Failed writing body)", () => {
    // grep -q, grep -m and head close the pipe at their first match while curl is still writing:
    // a large answer (/metrics) then fails the command some of the time.
    const early = /\bcurl\b[^|\n]*\|\s*(?:grep\s+(?:-\w*[qm]|--quiet|--max-count)|head\b)/;
    const offenders = docsBlocks()
      .flatMap((b) => b.code.split("\n").map((line, i) => ({ where: `${b.page}:${b.line + 1 + i}`, line })))
      .filter(({ line }) => early.test(line));
    expect(offenders).toEqual([]);
  });
});

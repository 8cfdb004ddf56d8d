// Every relative link and anchor in the repository's markdown resolves: the file exists, and
// an anchor names a heading of the target page as GitHub slugs it.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import GithubSlugger from "github-slugger";
import MarkdownIt from "markdown-it";

type Token = MarkdownIt.Token;

const ROOT = path.resolve(__dirname, "..");
const md = new MarkdownIt({ html: true });

/** Tracked markdown files, and new ones not ignored (so a page is checked before it is committed). */
function markdownFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return [...new Set(out.split("\0").filter(Boolean))].filter((f) => existsSync(path.join(ROOT, f))).sort();
}

function inlineText(token: Token): string {
  return (token.children ?? [])
    .filter((c) => c.type === "text" || c.type === "code_inline")
    .map((c) => c.content)
    .join("");
}

const anchorCache = new Map<string, Set<string>>();
/** The anchors GitHub gives a page: one per heading, plus explicit <a id|name="..."> targets. */
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const slugger = new GithubSlugger();
  const text = readFileSync(file, "utf8");
  const tokens = md.parse(text, {});
  tokens.forEach((token, i) => {
    if (token.type === "heading_open") anchors!.add(slugger.slug(inlineText(tokens[i + 1]!)));
  });
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  anchorCache.set(file, anchors);
  return anchors;
}

function linksOf(file: string): string[] {
  const links: string[] = [];
  const visit = (tokens: Token[]) => {
    for (const t of tokens) {
      if (t.type === "link_open") links.push(String(t.attrGet("href") ?? ""));
      if (t.type === "image") links.push(String(t.attrGet("src") ?? ""));
      if (t.children) visit(t.children);
    }
  };
  visit(md.parse(readFileSync(file, "utf8"), {}));
  return links;
}

/** Problems with one link of `file`, or none. */
export function checkLink(file: string, href: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) return undefined; // external
  const [rawPath, anchor] = href.split("#", 2) as [string, string | undefined];
  const target = rawPath === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(rawPath));
  if (!target.startsWith(ROOT + path.sep) && target !== ROOT) return `${href}: points outside the repository`;
  if (!existsSync(target)) return `${href}: ${path.relative(ROOT, target)} does not exist`;
  if (anchor !== undefined && target.endsWith(".md") && statSync(target).isFile()) {
    if (!anchorsOf(target).has(decodeURIComponent(anchor))) {
      return `${href}: ${path.relative(ROOT, target)} has no heading with the anchor #${anchor}`;
    }
  }
  return undefined;
}

describe("markdown links", () => {
  const files = markdownFiles();

  it("finds the documentation", () => {
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/architecture.md", "docs/configuration.md"]));
  });

  it("every relative link and anchor resolves", () => {
    const problems: string[] = [];
    for (const rel of files) {
      const file = path.join(ROOT, rel);
      for (const href of linksOf(file)) {
        const problem = checkLink(file, href);
        if (problem) problems.push(`${rel}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the checker reports a missing file, a missing anchor and accepts GitHub's slugs", () => {
    const readme = path.join(ROOT, "README.md");
    expect(checkLink(readme, "docs/no-such-page.md")).toMatch(/does not exist/);
    expect(checkLink(readme, "docs/configuration.md#no-such-heading")).toMatch(/no heading/);
    expect(checkLink(readme, "docs/configuration.md#media-service")).toBeUndefined();
    expect(checkLink(readme, "#where-to-go-next")).toBeUndefined();
    expect(checkLink(readme, "https://example.com/x.md#y")).toBeUndefined();
  });
});

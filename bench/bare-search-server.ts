/**
 * Reference for the search and list rows: the least a Node server can do to answer them with the
 * service's own SQL. A bare node:http server on a pg pool of 10 (the service's size) that runs
 * search-sql.ts' statements (the raw SQL reference's) and answers the page's rows with
 * JSON.stringify: no Express, authentication, validation, Prisma, serializer, logging or metrics.
 * What it adds to the raw SQL is what HTTP and JSON cost on the machine; what the service adds
 * to it is the service's own. Started as a child process (PORT, DATABASE_URL).
 *
 *   GET /full-text?q=<query>[&facets=1]
 *   GET /list[?search=<substring>][&afterCreatedAt=<iso>&afterId=<uuid>]
 */
import { createServer } from "node:http";
import { openPool, rawFullText, rawFullTextFacets, rawList, type RawPage } from "./search-sql";

const db = openPool(process.env.DATABASE_URL!);

function answer(url: URL): Promise<RawPage> | null {
  const q = url.searchParams;
  if (url.pathname === "/full-text") {
    const text = q.get("q") ?? "";
    return q.has("facets") ? rawFullTextFacets(db, text) : rawFullText(db, text);
  }
  if (url.pathname === "/list") {
    const search = q.get("search") ?? undefined;
    const createdAt = q.get("afterCreatedAt");
    const id = q.get("afterId");
    return rawList(db, { search, after: createdAt && id ? { createdAt, id } : undefined });
  }
  if (url.pathname === "/healthz") return Promise.resolve({ ids: [], rows: [] });
  return null;
}

createServer((req, res) => {
  const work = answer(new URL(req.url ?? "/", "http://bare"));
  if (work === null) {
    res.writeHead(404).end();
    return;
  }
  work.then(
    (page) => {
      const body = JSON.stringify({ assets: page.rows, facets: page.facets });
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    },
    (err: unknown) => {
      res.writeHead(500, { "Content-Type": "text/plain" }).end(String(err));
    },
  );
}).listen(Number(process.env.PORT), "127.0.0.1");

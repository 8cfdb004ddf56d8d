import { openDatabase } from "@media-platform/management/database";
import { fullTextSearch, rankExact, queryTsquery, parseQuery } from "@media-platform/management/assets";
const url = process.env.URL!;
const queries = (process.env.QS ?? "mountain lake|city night|red car|\"mountain lake\"|\"city night\"|sun|mountains|blue sky water").split("|");
(async () => {
  const db = await openDatabase({ databaseUrl: url });
  for (const q of queries) {
    const times: number[] = [];
    let page: string[] = [];
    for (let i = 0; i < 15; i++) {
      const t0 = performance.now();
      const hits = await fullTextSearch(db.prisma, "bench-workspace", q, 25);
      times.push(performance.now() - t0);
      page = hits.map((h) => h.id);
    }
    times.sort((a, b) => a - b);
    const exact = (await rankExact(db.prisma, "bench-workspace", queryTsquery(parseQuery(q)), 25)).map((h) => h.id);
    console.log(`${q.padEnd(22)} p50 ${times[7]!.toFixed(1)} ms  max ${times[14]!.toFixed(1)} ms  same=${JSON.stringify(page) === JSON.stringify(exact)}`);
  }
  await db.prisma.$disconnect();
})();

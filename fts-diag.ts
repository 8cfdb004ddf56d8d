import { openDatabase } from "@media-platform/management/database";
import { rankPairs, pairsAreExact, conjunctionPlan, rankCandidates, candidatesAreExact, queryTsquery, parseQuery, CANDIDATES_PER_RESULT } from "@media-platform/management/assets";
(async () => {
  const db = await openDatabase({ databaseUrl: process.env.URL! });
  for (const q of (process.env.QS ?? "red car|sun").split("|")) {
    const p = parseQuery(q);
    const plan = await conjunctionPlan(db.prisma, p);
    for (const perResult of CANDIDATES_PER_RESULT) {
      const t0 = performance.now();
      if (plan?.pairs) {
        const r = await rankPairs(db.prisma, "bench-workspace", queryTsquery(p), plan, { limit: 25, perResult });
        console.log(q, perResult, (performance.now() - t0).toFixed(1), "ms", JSON.stringify({ d: r.deeper, pairs: r.pairs, lb: r.listsBound, pr: r.prunedScore, n: r.hits.length, s25: r.hits[24]?.score, c25: r.hits[24]?.createdAt, proved: pairsAreExact(r, 25) }));
      } else {
        const c = await rankCandidates(db.prisma, "bench-workspace", queryTsquery(p), { limit: 25, perResult });
        console.log(q, perResult, (performance.now() - t0).toFixed(1), "ms", { bound: c.bound, pruned: c.prunedBound, n: c.hits.length, s25: c.hits[24]?.score, proved: candidatesAreExact(c, 25) });
      }
    }
  }
  await db.prisma.$disconnect();
})();

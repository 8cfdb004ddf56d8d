/**
 * The public surface of `@media-platform/management/assets`: the asset queries the API runs
 * (full-text search and its ranking plans, facet counts, rows by id) and the image analysis an
 * upload runs, callable on a database of one's own. The benches rely on these names only (to
 * time the service's own SQL and analysis without HTTP); everything else under src/ is internal.
 */
export {
  parseQuery,
  queryTsquery,
  fullTextSearch,
  rankFullText,
  rankCandidates,
  candidatesAreExact,
  rankExact,
  conjunctionPlan,
  rankConjunction,
  conjunctionIsExact,
  rankPairs,
  pairsAreExact,
  rankPrefix,
  prefixIsExact,
  CANDIDATES_PER_RESULT,
} from "../assets/search";
export { countFacets } from "../assets/facets";
export { ASSET_COLUMNS, liveAssetsByIds } from "../assets/rows";
export { LIST_ESTIMATE_TTL_MS } from "../assets/service";
export { analyseImage, type SpooledFile } from "../assets/image-analysis";
export { metadataContainerOf, removePrivateMetadata } from "../assets/original-privacy";

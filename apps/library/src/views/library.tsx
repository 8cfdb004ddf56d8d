import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { CollectionDto, ListedAssetDto } from "@media-platform/client";
import { CollectionOptions } from "../components/collection-options";
import { Thumb, titleOf } from "../components/thumb";
import { href } from "../route";
import { client, describeError } from "../session";
import { Upload } from "./upload";

/** Typing pauses this long before the list is asked again. */
const SEARCH_DEBOUNCE_MS = 300;
const PAGE_SIZE = 40;

interface Filters {
  search: string;
  collectionId: string;
  tag: string;
}

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

export function Library({ trash }: { trash: boolean }) {
  const [collections, setCollections] = useState<CollectionDto[]>([]);
  const [filters, setFilters] = useState<Filters>({ search: "", collectionId: "", tag: "" });
  const search = useDebounced(filters.search.trim(), SEARCH_DEBOUNCE_MS);
  const tag = useDebounced(filters.tag.trim(), SEARCH_DEBOUNCE_MS);
  const [assets, setAssets] = useState<ListedAssetDto[]>([]);
  const [count, setCount] = useState<{ value: number; estimate: boolean } | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const generation = useRef(0);
  const sentinel = useRef<HTMLDivElement>(null);

  useEffect(() => {
    client.listCollections().then(
      (r) => setCollections(r.collections),
      () => setCollections([]),
    );
  }, []);

  const query = useCallback(
    (after?: string) =>
      client.listAssets({
        search: search || undefined,
        tag: tag || undefined,
        collectionId: filters.collectionId || undefined,
        trashed: trash || undefined,
        limit: PAGE_SIZE,
        cursor: after,
      }),
    [search, tag, filters.collectionId, trash],
  );

  // A new filter starts over; answers of an older query are dropped.
  useEffect(() => {
    const mine = ++generation.current;
    setLoading(true);
    setError(null);
    query().then(
      (page) => {
        if (mine !== generation.current) return;
        setAssets(page.assets);
        setCount({ value: page.count, estimate: page.countIsEstimate === true });
        setCursor(page.nextCursor);
        setLoading(false);
      },
      (err: unknown) => {
        if (mine !== generation.current) return;
        setError(describeError(err));
        setLoading(false);
      },
    );
  }, [query, reload]);

  const more = useCallback(() => {
    if (!cursor || loading) return;
    const mine = generation.current;
    setLoading(true);
    query(cursor).then(
      (page) => {
        if (mine !== generation.current) return;
        setAssets((prev) => [...prev, ...page.assets.filter((a) => !prev.some((p) => p.id === a.id))]);
        setCursor(page.nextCursor);
        setLoading(false);
      },
      (err: unknown) => {
        setError(describeError(err));
        setLoading(false);
      },
    );
  }, [cursor, loading, query]);

  // Infinite scroll: the next page loads as the end of the grid comes into view.
  useEffect(() => {
    const el = sentinel.current;
    if (!el || !cursor) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) more();
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [cursor, more]);

  async function restore(id: string) {
    try {
      await client.restoreAsset(id);
      setAssets((prev) => prev.filter((a) => a.id !== id));
      setCount((c) => (c && !c.estimate ? { ...c, value: c.value - 1 } : c));
    } catch (err) {
      setError(describeError(err));
    }
  }

  const countText =
    count === null
      ? ""
      : count.estimate
        ? `about ${count.value.toLocaleString("en")} assets`
        : `${count.value.toLocaleString("en")} ${count.value === 1 ? "asset" : "assets"}`;

  return (
    <section class="library" aria-labelledby="library-title">
      <h1 id="library-title">{trash ? "Trash" : "Library"}</h1>
      {!trash && <Upload collectionId={filters.collectionId} onUploaded={() => setReload((n) => n + 1)} />}
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="search">Search</label>
          <input
            id="search"
            type="search"
            value={filters.search}
            placeholder="Title, tags, caption, file name"
            onInput={(e) => setFilters({ ...filters, search: e.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="collection">Collection</label>
          <select
            id="collection"
            value={filters.collectionId}
            onChange={(e) => setFilters({ ...filters, collectionId: e.currentTarget.value })}
          >
            <CollectionOptions collections={collections} none="All collections" />
          </select>
        </div>
        <div class="field">
          <label for="tag">Tag</label>
          <input
            id="tag"
            value={filters.tag}
            placeholder="exact tag"
            onInput={(e) => setFilters({ ...filters, tag: e.currentTarget.value })}
          />
        </div>
      </form>
      <p class="count" role="status" aria-live="polite" data-testid="count">
        {loading && assets.length === 0 ? "Loading…" : countText}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="grid">
        {assets.map((asset) => (
          <li key={asset.id} class="card" data-asset-id={asset.id}>
            <a href={href.asset(asset.id)} aria-label={titleOf(asset)}>
              <Thumb asset={asset} alt="" />
              <span class="title">{titleOf(asset)}</span>
            </a>
            {trash && (
              <button type="button" onClick={() => restore(asset.id)}>
                Restore <span class="visually-hidden">{titleOf(asset)}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      <div ref={sentinel} class="sentinel" />
      {cursor && (
        <button type="button" class="more" onClick={more} disabled={loading}>
          Load more
        </button>
      )}
      {!loading && assets.length === 0 && !error && <p class="empty">{trash ? "The trash is empty." : "No assets."}</p>}
    </section>
  );
}

import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { CollectionDto, ListedAssetDto } from "@media-platform/client";
import { CollectionOptions } from "../components/collection-options";
import { freshUrl, Thumb, THUMBNAIL_STEP, titleOf } from "../components/thumb";
import { mediaPath, mediaUrls, useMediaUrls } from "../media";
import { href } from "../route";
import { client, describeError } from "../session";
import { Upload } from "./upload";

/** Typing pauses this long before the list is asked again. */
const SEARCH_DEBOUNCE_MS = 300;
const PAGE_SIZE = 40;
/** The batch API takes this many ids per call. */
const BATCH_IDS = 1000;

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

type BulkAction =
  | { action: "delete" | "restore" }
  | { action: "addTags" | "removeTags"; value: string[] }
  | { action: "setCollection"; value: string | null };

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
  const [status, setStatus] = useState("");
  const [reload, setReload] = useState(0);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const anchor = useRef<string | null>(null);
  const generation = useRef(0);
  const sentinel = useRef<HTMLDivElement>(null);
  const grid = useRef<HTMLUListElement>(null);

  useEffect(() => {
    client.listCollections().then(
      (r) => setCollections(r.collections),
      () => setCollections([]),
    );
  }, []);

  const listParams = useMemo(
    () => ({
      search: search || undefined,
      tag: tag || undefined,
      collectionId: filters.collectionId || undefined,
      trashed: trash || undefined,
    }),
    [search, tag, filters.collectionId, trash],
  );
  const query = useCallback(
    (after?: string) => client.listAssets({ ...listParams, limit: PAGE_SIZE, cursor: after }),
    [listParams],
  );

  const take = (page: ListedAssetDto[]) => {
    // The list's own URLs are signed already: no round trip for the first view.
    for (const a of page) mediaUrls.seed(a.mediaUrl);
    return page;
  };

  // A new filter starts over (and forgets the selection); answers of an older query are dropped.
  useEffect(() => {
    const mine = ++generation.current;
    setLoading(true);
    setError(null);
    query().then(
      (page) => {
        if (mine !== generation.current) return;
        setAssets(take(page.assets));
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
  useEffect(() => {
    setSelected(new Set());
    anchor.current = null;
  }, [query]);

  const more = useCallback(() => {
    if (!cursor || loading) return;
    const mine = generation.current;
    setLoading(true);
    query(cursor).then(
      (page) => {
        if (mine !== generation.current) return;
        setAssets((prev) => [...prev, ...take(page.assets).filter((a) => !prev.some((p) => p.id === a.id))]);
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

  const thumbPaths = useMemo(() => (trash ? [] : assets.map((a) => mediaPath(a, [THUMBNAIL_STEP]))), [assets, trash]);
  const urls = useMediaUrls(thumbPaths);

  /** Selects one card; with shift, every card from the last one chosen to this one. */
  function choose(id: string, range: boolean) {
    setSelected((prev) => {
      const next = new Set(prev);
      const from = anchor.current === null ? -1 : assets.findIndex((a) => a.id === anchor.current);
      const to = assets.findIndex((a) => a.id === id);
      if (range && from >= 0 && to >= 0) {
        const on = !prev.has(id) || prev.has(anchor.current!);
        for (let i = Math.min(from, to); i <= Math.max(from, to); i++) {
          if (on) next.add(assets[i]!.id);
          else next.delete(assets[i]!.id);
        }
      } else if (next.has(id)) {
        next.delete(id);
      } else {
        next.add(id);
      }
      return next;
    });
    anchor.current = id;
  }

  /** Every asset the current filter matches, page after page (not only the ones loaded). */
  async function selectAll() {
    setStatus("Selecting…");
    try {
      const ids: string[] = [];
      for await (const asset of client.iterateAssets({ ...listParams, limit: 100 })) ids.push(asset.id);
      setSelected(new Set(ids));
      setStatus(`${ids.length} selected`);
    } catch (err) {
      setError(describeError(err));
      setStatus("");
    }
  }

  async function bulk(change: BulkAction, done: string) {
    const ids = [...selected];
    setError(null);
    setStatus("Working…");
    try {
      let changed = 0;
      for (let i = 0; i < ids.length; i += BATCH_IDS) {
        const result = await client.batchAssets({ ...change, ids: ids.slice(i, i + BATCH_IDS) } as Parameters<
          typeof client.batchAssets
        >[0]);
        changed += result.changed;
      }
      setStatus(`${done}: ${changed} ${changed === 1 ? "asset" : "assets"}`);
      setSelected(new Set());
      anchor.current = null;
      setReload((n) => n + 1);
    } catch (err) {
      setError(describeError(err));
      setStatus("");
    }
  }

  async function restore(id: string) {
    try {
      await client.restoreAsset(id);
      setAssets((prev) => prev.filter((a) => a.id !== id));
      setCount((c) => (c && !c.estimate ? { ...c, value: c.value - 1 } : c));
    } catch (err) {
      setError(describeError(err));
    }
  }

  /** Arrow keys move between cards (up and down by a row as laid out), space selects, shift extends. */
  function onGridKey(e: KeyboardEvent) {
    const target = e.target as HTMLElement;
    const card = target.closest<HTMLElement>(".card");
    // The card's link and checkbox take the grid's keys; its buttons keep their own.
    if (!card || !grid.current || target.tagName === "BUTTON") return;
    const cards = [...grid.current.querySelectorAll<HTMLElement>(".card")];
    const index = cards.indexOf(card);
    const id = card.dataset.assetId!;
    const focusCard = (i: number) => {
      const next = cards[Math.max(0, Math.min(cards.length - 1, i))];
      next?.querySelector<HTMLElement>("a.card-link")?.focus();
      return next?.dataset.assetId;
    };
    const perRow = cards.filter((c) => c.offsetTop === cards[0]!.offsetTop).length || 1;
    let moved: string | undefined;
    switch (e.key) {
      case "ArrowRight":
        moved = focusCard(index + 1);
        break;
      case "ArrowLeft":
        moved = focusCard(index - 1);
        break;
      case "ArrowDown":
        moved = focusCard(index + perRow);
        break;
      case "ArrowUp":
        moved = focusCard(index - perRow);
        break;
      case "Home":
        moved = focusCard(0);
        break;
      case "End":
        moved = focusCard(cards.length - 1);
        break;
      case " ":
        // The checkbox toggles itself on space; the link selects its card.
        if (target.tagName === "INPUT") return;
        e.preventDefault();
        choose(id, e.shiftKey);
        return;
      case "Escape":
        setSelected(new Set());
        return;
      default:
        return;
    }
    e.preventDefault();
    if (moved && e.shiftKey) choose(moved, true);
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
      <div class="grid-head">
        <p class="count" role="status" aria-live="polite" data-testid="count">
          {loading && assets.length === 0 ? "Loading…" : countText}
        </p>
        {assets.length > 0 && (
          <button type="button" onClick={() => void selectAll()}>
            Select all {count && !count.estimate ? count.value.toLocaleString("en") : ""}
          </button>
        )}
      </div>
      {selected.size > 0 && (
        <BulkBar
          trash={trash}
          count={selected.size}
          collections={collections}
          onAction={(change, done) => void bulk(change, done)}
          onClear={() => setSelected(new Set())}
        />
      )}
      <p class="status" role="status" aria-live="polite" data-testid="bulk-status">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="grid" ref={grid} onKeyDown={onGridKey} aria-label={trash ? "Assets in the trash" : "Assets"}>
        {assets.map((asset) => {
          const title = titleOf(asset);
          const isSelected = selected.has(asset.id);
          const url = urls[mediaPath(asset, [THUMBNAIL_STEP])];
          return (
            <li key={asset.id} class={isSelected ? "card selected" : "card"} data-asset-id={asset.id}>
              <input
                type="checkbox"
                class="select"
                checked={isSelected}
                aria-label={`Select ${title}`}
                onClick={(e) => choose(asset.id, e.shiftKey)}
              />
              <a class="card-link" href={href.asset(asset.id)} aria-label={title}>
                {trash ? (
                  <TrashThumb asset={asset} />
                ) : (
                  <Thumb asset={asset} alt="" src={url ? freshUrl(url, asset) : undefined} />
                )}
                <span class="title">{title}</span>
              </a>
              {trash && (
                <button type="button" onClick={() => restore(asset.id)}>
                  Restore <span class="visually-hidden">{title}</span>
                </button>
              )}
            </li>
          );
        })}
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

/** What can be done to the selection: through POST /v1/assets/batch. */
function BulkBar({
  trash,
  count,
  collections,
  onAction,
  onClear,
}: {
  trash: boolean;
  count: number;
  collections: CollectionDto[];
  onAction: (change: BulkAction, done: string) => void;
  onClear: () => void;
}) {
  const [tag, setTag] = useState("");
  const [collection, setCollection] = useState("");
  const tags = () =>
    tag
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
  return (
    <div class="bulk" role="region" aria-label="Selected assets" data-testid="bulk-bar">
      <p>
        <strong>{count.toLocaleString("en")}</strong> selected
      </p>
      {trash ? (
        <button type="button" onClick={() => onAction({ action: "restore" }, "Restored")}>
          Restore selected
        </button>
      ) : (
        <>
          <button type="button" onClick={() => onAction({ action: "delete" }, "Moved to the trash")}>
            Move to trash
          </button>
          <form
            class="bulk-field"
            onSubmit={(e) => {
              e.preventDefault();
              if (tags().length) onAction({ action: "addTags", value: tags() }, "Tagged");
            }}
          >
            <label for="bulk-tag">Tag</label>
            <input id="bulk-tag" value={tag} placeholder="e.g. summer" onInput={(e) => setTag(e.currentTarget.value)} />
            <button type="submit" disabled={tags().length === 0}>
              Add tag
            </button>
            <button
              type="button"
              disabled={tags().length === 0}
              onClick={() => onAction({ action: "removeTags", value: tags() }, "Tag removed")}
            >
              Remove tag
            </button>
          </form>
          <form
            class="bulk-field"
            onSubmit={(e) => {
              e.preventDefault();
              onAction({ action: "setCollection", value: collection || null }, "Moved");
            }}
          >
            <label for="bulk-collection">Collection</label>
            <select id="bulk-collection" value={collection} onChange={(e) => setCollection(e.currentTarget.value)}>
              <CollectionOptions collections={collections} none="No collection" />
            </select>
            <button type="submit">Move to collection</button>
          </form>
        </>
      )}
      <button type="button" onClick={onClear}>
        Clear selection
      </button>
    </div>
  );
}

/**
 * A trashed asset's thumbnail: media answers 404 for it (its original is out of reach), so it
 * comes from the management API with the user's token, shown as a blob: URL.
 */
function TrashThumb({ asset }: { asset: ListedAssetDto }) {
  const [src, setSrc] = useState<string | undefined>(undefined);
  useEffect(() => {
    let url: string | undefined;
    let live = true;
    client.getTrashThumbnail(asset.id).then(
      (blob) => {
        if (!live) return;
        url = URL.createObjectURL(blob);
        setSrc(url);
      },
      () => undefined,
    );
    return () => {
      live = false;
      if (url) URL.revokeObjectURL(url);
    };
  }, [asset.id, asset.updatedAt]);
  return <Thumb asset={asset} alt="" src={src} />;
}

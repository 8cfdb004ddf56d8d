import { useEffect, useMemo, useState } from "preact/hooks";
import type { ListedAssetDto } from "@media-platform/client";
import { client, settings } from "./session";

/** The asset's media extension, as its example mediaUrl spells it. */
export const extensionOf = (asset: Pick<ListedAssetDto, "mediaUrl">): string => {
  const path = asset.mediaUrl.split("?", 1)[0]!;
  return path.slice(path.lastIndexOf(".") + 1);
};

/** A media path of the asset after `steps` (already formatted step segments). */
export function mediaPath(asset: Pick<ListedAssetDto, "id" | "mediaUrl">, steps: string[]): string {
  return `/${[...steps, `${asset.id}.${extensionOf(asset)}`].join("/")}`;
}

/** The original's path: what the studio shows before any step. */
export const originalPath = (asset: Pick<ListedAssetDto, "id" | "mediaUrl">): string =>
  `/original/${asset.id}.${extensionOf(asset)}`;

interface Signed {
  url: string;
  /** When to ask again (ms epoch): half way to the URL's exp. Infinity: never. */
  refreshAt: number;
}

/** Paths the server says no live asset of the workspace has (trashed meanwhile). */
const MISSING = "";
/** One request signs at most this many paths (the API takes 500). */
const BATCH = 500;

/**
 * The media URLs the page shows. Unsigned deployments need nothing: base URL + path. With
 * signing on, every path is signed by the management API (the key never reaches the browser),
 * batched: the paths asked for within one tick go in one POST /v1/media-urls/sign-batch. The API
 * gives every URL of a window the same exp, so the same path gets the same URL again (the
 * browser's and the CDN's caches hit); a URL is asked for again half way to its exp, so none
 * lapses on screen.
 */
class MediaUrls {
  private readonly known = new Map<string, Signed>();
  private pending = new Map<string, Array<(url: string) => void>>();
  private flushing = false;

  /** The URL now if it is known and fresh (or needs no signature); else undefined. */
  peek(path: string): string | undefined {
    if (!settings.mediaSigned) return settings.mediaUrl + path;
    const entry = this.known.get(path);
    return entry && entry.refreshAt > Date.now() ? entry.url : undefined;
  }

  /** The last URL known for the path, fresh or not (what a view keeps showing while re-signing). */
  last(path: string): string | undefined {
    return settings.mediaSigned ? this.known.get(path)?.url : settings.mediaUrl + path;
  }

  refreshAt(path: string): number {
    return settings.mediaSigned ? (this.known.get(path)?.refreshAt ?? 0) : Infinity;
  }

  /**
   * Takes in a URL the API already handed out (an asset's `mediaUrl`), so a grid page needs no
   * signing round trip of its own; it is re-asked half way to its exp like the others.
   */
  seed(url: string): void {
    if (!settings.mediaSigned || !url.startsWith(settings.mediaUrl)) return;
    const rest = url.slice(settings.mediaUrl.length);
    const q = rest.indexOf("?");
    const path = q < 0 ? rest : rest.slice(0, q);
    const exp = Number(new URLSearchParams(q < 0 ? "" : rest.slice(q + 1)).get("exp"));
    const now = Date.now();
    const refreshAt = exp > 0 ? now + (exp * 1000 - now) / 2 : Infinity;
    const known = this.known.get(path);
    if (!known || known.refreshAt < refreshAt) this.known.set(path, { url, refreshAt });
  }

  /** The URL of `path` ("" when its asset is gone). */
  get(path: string): Promise<string> {
    const now = this.peek(path);
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve) => {
      const waiting = this.pending.get(path);
      if (waiting) waiting.push(resolve);
      else this.pending.set(path, [resolve]);
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = false;
    const paths = [...batch.keys()];
    for (let i = 0; i < paths.length; i += BATCH) {
      const chunk = paths.slice(i, i + BATCH);
      const minted = Date.now();
      let urls: Record<string, string> = {};
      let expiresAt: number | null = null;
      try {
        const answer = await client.signMediaUrls(chunk);
        urls = answer.urls;
        expiresAt = answer.expiresAt;
      } catch {
        // Left unsigned: the views show their placeholders, and ask again on the next render.
      }
      const refreshAt = expiresAt === null ? Infinity : minted + (expiresAt * 1000 - minted) / 2;
      for (const path of chunk) {
        const url = urls[path];
        if (url !== undefined) this.known.set(path, { url, refreshAt });
        for (const resolve of batch.get(path) ?? []) resolve(url ?? MISSING);
      }
    }
  }
}

export const mediaUrls = new MediaUrls();

/**
 * The URLs of `paths`, signed when the deployment signs; re-asked before they expire. A path not
 * yet known maps to undefined (the view shows its placeholder), a gone asset's to "".
 */
export function useMediaUrls(paths: readonly string[]): Record<string, string | undefined> {
  const key = paths.join("\n");
  const stable = useMemo(() => [...paths], [key]);
  const read = () => Object.fromEntries(stable.map((p) => [p, mediaUrls.last(p)]));
  const [urls, setUrls] = useState<Record<string, string | undefined>>(read);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = () => {
      void Promise.all(stable.map((p) => mediaUrls.get(p))).then(() => {
        if (!live) return;
        setUrls(read());
        const next = Math.min(...stable.map((p) => mediaUrls.refreshAt(p)));
        if (Number.isFinite(next)) timer = setTimeout(load, Math.max(1000, next - Date.now()));
      });
    };
    setUrls(read());
    load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [stable]);
  return urls;
}

/** One path's URL (see useMediaUrls). */
export function useMediaUrl(path: string | null): string | undefined {
  const urls = useMediaUrls(path === null ? [] : [path]);
  return path === null ? undefined : urls[path];
}

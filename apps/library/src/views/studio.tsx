import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { DEFAULT_ENCODER_QUALITY, type LossyFormat } from "@media-platform/contracts";
import type { AssetDto } from "@media-platform/client";
import { titleOf } from "../components/thumb";
import { mediaPath, mediaUrls, originalPath } from "../media";
import { href } from "../route";
import { client, describeError, settings } from "../session";
import { STUDIO_HELP } from "../studio-help";

/** GET {media}/transformations, as much of it as the studio reads. */
interface CatalogParam {
  name: string;
  type: "integer" | "number" | "enum" | "color" | "text";
  description: string;
  required: boolean;
  default: number | string | null;
  range: string;
  min: number | null;
  exclusiveMin: boolean;
  max: number | null;
  values: string[] | null;
  extensionValues?: string[];
  /** Integer parameters that also take words (quality: auto). */
  keywords?: string[];
}
interface CatalogTransformation {
  name: string;
  description: string;
  params: CatalogParam[];
}
interface Catalog {
  maxSteps: number;
  transformations: CatalogTransformation[];
}

/** One step of the chain: a value per parameter the user set (unset ones take the service's default). */
interface Step {
  key: number;
  name: string;
  values: Record<string, string>;
}

interface Preview {
  /** The chain changed: this is the previous chain's image while the new one loads. */
  pending?: boolean;
  /** The URL shown and offered to copy (signed when the deployment signs); absent while it fails. */
  url?: string;
  objectUrl?: string;
  xCache?: string | null;
  contentType?: string | null;
  bytes?: number;
  width?: number;
  height?: number;
  problem?: string;
  fieldErrors?: { path: string; message: string }[];
  info?: { width?: number; height?: number; format?: string; animated?: boolean; frames?: number };
}

/** One candidate of the srcset: the URL asked for and the width it really gives. */
interface SrcsetEntry {
  url: string;
  width: number;
}

/** The preview waits for this pause in changes (each change is a render on the media service). */
const PREVIEW_DEBOUNCE_MS = 400;
/** Widths the srcset asks for; each is listed with the width it really gives, once per real width. */
const SRCSET_WIDTHS = [320, 640, 960, 1280, 1920];
/** The first step a studio opens with: a screen-sized copy (the original can be tens of megabytes). */
const FIRST_WIDTH = 800;

let nextKey = 0;

/** A value a parameter the chain must carry starts at: its default, else a value in range. */
function initialValue(p: CatalogParam): string {
  if (p.default !== null) return String(p.default);
  if (p.type === "enum") return p.values?.[0] ?? "";
  if (p.type === "color") return "ffffff";
  if (p.type === "text") return "";
  if (p.name === "width" || p.name === "height" || p.name === "size") return "400";
  const min = p.min ?? 0;
  return String(p.exclusiveMin ? min + (p.type === "integer" ? 1 : 0.1) : Math.max(min, Math.min(1, p.max ?? 1)));
}

/**
 * What a parameter left unset really is, in the step as it stands: the catalog's default, or
 * for a quality the encoder's default for the output format; null when it is "not applied"
 * (a crop's x without a value is placed by gravity).
 */
function realDefault(step: Step, p: CatalogParam, assetFormat: string): string | null {
  if (p.default !== null) return String(p.default);
  if (p.name === "quality") {
    const type = (step.values.type ?? assetFormat) as string;
    const format = type === "jpg" ? "jpeg" : type;
    return format in DEFAULT_ENCODER_QUALITY ? String(DEFAULT_ENCODER_QUALITY[format as LossyFormat]) : null;
  }
  return null;
}

/** A step segment as the media service spells it: names in table order, numbers as JavaScript prints them. */
function formatStep(t: CatalogTransformation, step: Step): string {
  const parts = t.params
    .filter((p) => step.values[p.name] !== undefined && step.values[p.name] !== "")
    .map((p) => {
      const raw = step.values[p.name]!;
      const numeric = (p.type === "integer" || p.type === "number") && !p.keywords?.includes(raw);
      const value = numeric ? String(Number(raw)) : encodeURIComponent(raw);
      return `${p.name}=${value}`;
    });
  return [step.name, ...parts].join(":");
}

function sliderStep(p: CatalogParam): number {
  if (p.type === "integer") return 1;
  const span = (p.max ?? 10) - (p.min ?? 0);
  return span <= 2 ? 0.01 : span <= 20 ? 0.1 : 1;
}

/** The catalog's range without the operator's words (which setting caps it: the docs say). */
const plainRange = (range: string): string => range.replace(/\s*\((safety cap|[A-Z_]{6,})[^)]*\)/g, "");

/** The tooltip of a parameter: the studio's own words, the catalog's only for a step it does not know. */
const helpOf = (step: string, param: CatalogParam): string =>
  STUDIO_HELP[step]?.params[param.name] ?? param.description;

function ParamControl({
  step,
  param,
  value,
  fallback,
  error,
  onChange,
}: {
  step: Step;
  param: CatalogParam;
  value: string | undefined;
  /** What the parameter is when unset (null: not applied). */
  fallback: string | null;
  error?: string;
  onChange: (value: string | undefined) => void;
}) {
  const id = `s${step.key}-${param.name}`;
  const set = value !== undefined;
  // An unset parameter shows what the service will really use, greyed.
  const shown = value ?? fallback ?? "";
  const describedBy = `${id}-tip ${id}-range${error ? ` ${id}-error` : ""}`;
  let control;
  if (param.type === "enum") {
    control = (
      <select
        id={id}
        value={shown}
        disabled={!set}
        aria-describedby={describedBy}
        onChange={(e) => onChange(e.currentTarget.value)}
      >
        {!set && fallback === null && <option value="">(none)</option>}
        {[...(param.values ?? []), ...(param.extensionValues ?? [])].map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (param.type === "color" || param.type === "text") {
    control = (
      <input
        id={id}
        value={shown}
        placeholder={set ? undefined : "not set"}
        disabled={!set}
        aria-describedby={describedBy}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    );
  } else {
    const min = param.min ?? 0;
    const max = param.max;
    const step = sliderStep(param);
    // A word instead of a number (quality=auto): the inputs show, greyed, the number "a number" goes back to.
    const keyword = param.keywords?.includes(shown) ? shown : undefined;
    const number = keyword === undefined ? shown : (fallback ?? initialValue(param));
    control = (
      <span class="slider">
        {param.keywords && (
          <select
            aria-label={`${param.name} kind`}
            value={keyword ?? ""}
            disabled={!set}
            onChange={(e) => onChange(e.currentTarget.value || number || initialValue(param))}
          >
            <option value="">a number</option>
            {param.keywords.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        )}
        {max !== null && (
          <input
            type="range"
            id={id}
            min={param.exclusiveMin ? min + step : min}
            max={max}
            step={step}
            value={number === "" ? initialValue(param) : number}
            disabled={!set || keyword !== undefined}
            aria-describedby={describedBy}
            onInput={(e) => onChange(e.currentTarget.value)}
          />
        )}
        <input
          type="number"
          id={max === null ? id : `${id}-number`}
          aria-label={max === null ? undefined : `${param.name} value`}
          min={min}
          max={max ?? undefined}
          step={step}
          value={number}
          placeholder={set ? undefined : "not set"}
          disabled={!set || keyword !== undefined}
          aria-describedby={describedBy}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      </span>
    );
  }
  return (
    <div class={error ? "param invalid" : "param"} data-param={param.name}>
      <div class="param-head">
        {!param.required && (
          <input
            type="checkbox"
            id={`${id}-set`}
            checked={set}
            onChange={(e) => onChange(e.currentTarget.checked ? shown || initialValue(param) : undefined)}
            aria-label={`Set ${param.name}`}
          />
        )}
        <label for={id}>{param.name}</label>
        <span class="help">
          <button type="button" class="help-button" aria-label={`About ${param.name}`} aria-describedby={`${id}-tip`}>
            ?
          </button>
          <span class="tip" role="tooltip" id={`${id}-tip`} data-testid="param-tip">
            {helpOf(step.name, param)}
          </span>
        </span>
      </div>
      {control}
      <small id={`${id}-range`} data-testid="param-range">
        {plainRange(param.range)}
        {set ? "" : fallback !== null ? ` · default ${fallback}` : " · not applied unless set"}
      </small>
      {error && (
        <p id={`${id}-error`} class="error" role="alert" data-testid="param-error">
          {error}
        </p>
      )}
    </div>
  );
}

/** GET a media URL (signed when the deployment signs) as JSON; null when it fails. */
async function getJson<T>(url: string): Promise<T | null> {
  if (!url) return null;
  const response = await fetch(url).catch(() => null);
  if (!response?.ok || !response.headers.get("Content-Type")?.includes("json")) return null;
  return (await response.json()) as T;
}

export function Studio({ id }: { id: string }) {
  const [asset, setAsset] = useState<AssetDto | null>(null);
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [presets, setPresets] = useState<string[]>([]);
  const [preset, setPreset] = useState("");
  const [steps, setSteps] = useState<Step[] | null>(null);
  const [adding, setAdding] = useState("resize");
  const [preview, setPreview] = useState<Preview | null>(null);
  const [srcset, setSrcset] = useState<SrcsetEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState("");
  const generation = useRef(0);

  useEffect(() => {
    client.getAsset(id).then(setAsset, (err: unknown) => setError(describeError(err)));
    fetch(`${settings.mediaUrl}/transformations`)
      .then((r) => (r.ok ? (r.json() as Promise<Catalog>) : Promise.reject(new Error(`catalog: HTTP ${r.status}`))))
      .then(setCatalog, (err: unknown) => setError(describeError(err)));
    fetch(`${settings.mediaUrl}/presets`)
      .then((r) => (r.ok ? (r.json() as Promise<{ presets: { name: string }[] }>) : { presets: [] }))
      .then(
        (body) => setPresets(body.presets.map((p) => p.name)),
        () => setPresets([]),
      );
  }, [id]);

  // Opens on a screen-sized copy of the original: a working URL from the first moment.
  useEffect(() => {
    if (!asset || !catalog || steps !== null) return;
    const resize = catalog.transformations.find((t) => t.name === "resize");
    setSteps(
      resize ? [{ key: nextKey++, name: "resize", values: { width: String(Math.min(FIRST_WIDTH, asset.width)) } }] : [],
    );
  }, [asset, catalog, steps]);

  const byName = useMemo(() => new Map((catalog?.transformations ?? []).map((t) => [t.name, t])), [catalog]);
  const segments = useMemo(
    () =>
      (steps ?? []).flatMap((s) => {
        const t = byName.get(s.name);
        return t ? [formatStep(t, s)] : [];
      }),
    [steps, byName],
  );
  // No step: the original itself (a media URL needs at least one step).
  const path = useMemo(
    () => (asset && steps ? (segments.length ? mediaPath(asset, segments) : originalPath(asset)) : null),
    [asset, steps, segments],
  );

  // Debounced: the URL (signed by the API when the deployment signs), the rendition with X-Cache,
  // the URL's facts (/info), and the srcset's real widths (/info of each candidate).
  useEffect(() => {
    if (!path || !asset) return;
    const mine = ++generation.current;
    // The link and the messages shown are always the previewed chain's: a changed chain has
    // none until its answer is in (the last image stays, marked as updating).
    setPreview((prev) =>
      prev ? { objectUrl: prev.objectUrl, width: prev.width, height: prev.height, pending: true } : prev,
    );
    setSrcset(null);
    const timer = setTimeout(async () => {
      // The snippet's sizes replace a trailing resize rather than shrinking its result again.
      let end = segments.length;
      while (end > 0 && segments[end - 1]!.startsWith("resize:")) end--;
      const base = preset ? [`preset:name=${preset}`] : segments.slice(0, end);
      const candidates = SRCSET_WIDTHS.map((w) => mediaPath(asset, [...base, `resize:width=${w}`]));
      const isOriginal = path.startsWith("/original/");
      // One signing round trip for everything this view shows.
      const [url, infoUrl, ...signedCandidates] = await Promise.all([
        mediaUrls.get(path),
        isOriginal ? Promise.resolve("") : mediaUrls.get(`/info${path}`),
        ...candidates.flatMap((c) => [mediaUrls.get(c), mediaUrls.get(`/info${c}`)]),
      ]);
      const next: Preview = {};
      try {
        const response = await fetch(url!, { cache: "no-store" });
        if (response.ok) {
          const blob = await response.blob();
          next.url = url;
          next.objectUrl = URL.createObjectURL(blob);
          next.xCache = response.headers.get("X-Cache");
          next.contentType = response.headers.get("Content-Type");
          next.bytes = blob.size;
          next.info = (await getJson<Preview["info"]>(infoUrl!)) ?? undefined;
        } else {
          const problem = (await response.json().catch(() => ({}))) as {
            title?: string;
            detail?: string;
            errors?: { path: string; message: string }[];
          };
          next.problem = problem.detail ?? problem.title ?? `The media service answered ${response.status}`;
          next.fieldErrors = problem.errors ?? [];
        }
      } catch (err) {
        next.problem = describeError(err);
      }
      if (mine !== generation.current) {
        if (next.objectUrl) URL.revokeObjectURL(next.objectUrl);
        return;
      }
      setPreview((prev) => {
        if (prev?.objectUrl) URL.revokeObjectURL(prev.objectUrl);
        return next;
      });
      // The srcset: each candidate at the width it really gives, each real width once.
      let entries: SrcsetEntry[] | null = null;
      if (!next.problem) {
        const infos = await Promise.all(
          candidates.map((_, i) => getJson<{ width: number }>(signedCandidates[2 * i + 1]!)),
        );
        const byWidth = new Map<number, SrcsetEntry>();
        infos.forEach((info, i) => {
          if (info && !byWidth.has(info.width))
            byWidth.set(info.width, { url: signedCandidates[2 * i]!, width: info.width });
        });
        entries = [...byWidth.values()].sort((a, b) => a.width - b.width);
      }
      if (mine === generation.current) setSrcset(entries);
    }, PREVIEW_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [path, preset]);

  function addStep() {
    const t = byName.get(adding);
    if (!t || !steps) return;
    const values: Record<string, string> = {};
    for (const p of t.params) if (p.required) values[p.name] = initialValue(p);
    // A step that needs one of its optional parameters (resize: width or height) starts with the first.
    if (Object.keys(values).length === 0 && t.name === "resize" && t.params[0])
      values[t.params[0].name] = initialValue(t.params[0]);
    setSteps([...steps, { key: nextKey++, name: t.name, values }]);
  }

  const setValue = (key: number, name: string, value: string | undefined) =>
    setSteps((prev) =>
      (prev ?? []).map((s) => {
        if (s.key !== key) return s;
        const values = { ...s.values };
        if (value === undefined) delete values[name];
        else values[name] = value;
        return { ...s, values };
      }),
    );

  const move = (index: number, by: number) =>
    setSteps((prev) => {
      const next = [...(prev ?? [])];
      const [step] = next.splice(index, 1);
      next.splice(index + by, 0, step!);
      return next;
    });

  /** A 400's errors name `<transformation>.<param>`: shown next to that control (the first such step). */
  function errorFor(step: Step, param?: string): string | undefined {
    const first = steps?.find((s) => s.name === step.name);
    if (first?.key !== step.key) return undefined;
    const wanted = param ? `${step.name}.${param}` : step.name;
    return preview?.fieldErrors?.find((e) => e.path === wanted)?.message;
  }

  const snippet = useMemo(() => {
    if (!srcset || srcset.length === 0) return "";
    const src = srcset.reduce((best, e) => (Math.abs(e.width - 640) < Math.abs(best.width - 640) ? e : best));
    return [
      `<img src="${src.url}"`,
      `  srcset="${srcset.map((e) => `${e.url} ${e.width}w`).join(",\n          ")}"`,
      `  sizes="(max-width: 640px) 100vw, 640px" alt="">`,
    ].join("\n");
  }, [srcset]);

  async function copy(text: string, what: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(`${what} copied`);
    } catch {
      setCopied("Copy failed: select the text and copy it");
    }
  }

  if (!asset || !catalog || !steps) {
    return error ? (
      <p class="error" role="alert">
        {error}
      </p>
    ) : (
      <p>Loading…</p>
    );
  }
  const unplaced = (preview?.fieldErrors ?? []).filter(
    (e) => !steps.some((s) => e.path === s.name || e.path.startsWith(`${s.name}.`)),
  );
  const failing = preview?.problem !== undefined;

  return (
    <section class="studio" aria-labelledby="studio-title">
      <p>
        <a href={href.asset(id)}>← {titleOf(asset)}</a>
      </p>
      <h1 id="studio-title">URL studio</h1>
      <div class="studio-layout">
        <div class="chain">
          <h2>Steps</h2>
          {steps.length === 0 && <p class="hint">No steps: the link shows the original as uploaded.</p>}
          <ol class="steps">
            {steps.map((step, index) => {
              const t = byName.get(step.name)!;
              const help = STUDIO_HELP[step.name];
              return (
                <li key={step.key} class="step" data-step={step.name}>
                  <fieldset>
                    <legend>
                      {index + 1}. {help?.label ?? step.name}
                    </legend>
                    <p class="hint">{help?.about ?? t.description}</p>
                    {errorFor(step) && (
                      <p class="error" role="alert">
                        {errorFor(step)}
                      </p>
                    )}
                    {t.params.map((p) => (
                      <ParamControl
                        key={p.name}
                        step={step}
                        param={p}
                        value={step.values[p.name]}
                        fallback={realDefault(step, p, asset.format)}
                        error={errorFor(step, p.name)}
                        onChange={(v) => setValue(step.key, p.name, v)}
                      />
                    ))}
                    <div class="step-actions">
                      <button type="button" disabled={index === 0} onClick={() => move(index, -1)}>
                        Move up <span class="visually-hidden">step {index + 1}</span>
                      </button>
                      <button type="button" disabled={index === steps.length - 1} onClick={() => move(index, 1)}>
                        Move down <span class="visually-hidden">step {index + 1}</span>
                      </button>
                      <button
                        type="button"
                        onClick={() => setSteps((prev) => (prev ?? []).filter((s) => s.key !== step.key))}
                      >
                        Remove <span class="visually-hidden">step {index + 1}</span>
                      </button>
                    </div>
                  </fieldset>
                </li>
              );
            })}
          </ol>
          <div class="add-step">
            <label for="add-step">Transformation</label>
            <select id="add-step" value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
              {catalog.transformations.map((t) => (
                <option key={t.name} value={t.name}>
                  {STUDIO_HELP[t.name]?.label ?? t.name}
                </option>
              ))}
            </select>
            <button type="button" onClick={addStep} disabled={steps.length >= catalog.maxSteps}>
              Add step
            </button>
          </div>
        </div>
        <div class="result">
          <h2>Preview</h2>
          {preview?.objectUrl ? (
            <img
              class="studio-preview"
              src={preview.objectUrl}
              alt="Preview of the media URL"
              data-testid="studio-preview"
              onLoad={(e) => {
                const img = e.currentTarget;
                setPreview((p) => (p ? { ...p, width: img.naturalWidth, height: img.naturalHeight } : p));
              }}
            />
          ) : (
            <div class="studio-preview empty" />
          )}
          <p class="preview-facts" role="status" aria-live="polite" data-testid="preview-facts">
            {preview?.pending && "Updating the preview…"}
            {!preview?.pending &&
              preview?.objectUrl &&
              `${preview.xCache ?? "?"} · ${preview.width ?? "…"} × ${preview.height ?? "…"} px · ${preview.contentType ?? ""} · ${preview.bytes?.toLocaleString("en")} bytes`}
          </p>
          {failing && (
            <div class="error" role="alert" data-testid="preview-problem">
              <p>This combination does not work: {preview!.problem}</p>
              <p>Change the value marked in the steps; the link appears once it works.</p>
            </div>
          )}
          {unplaced.map((e) => (
            <p class="error" key={e.path}>
              {e.path}: {e.message}
            </p>
          ))}
          <h3>Link {settings.mediaSigned ? "(signed)" : ""}</h3>
          {preview?.url && !failing ? (
            <div class="url-row">
              <output class="url" data-testid="media-url" aria-label="Media URL">
                {preview.url}
              </output>
              <button type="button" onClick={() => copy(preview.url!, "Link")}>
                Copy link
              </button>
            </div>
          ) : (
            <p class="hint" data-testid="media-url-pending">
              {failing ? "No link while the steps have an error." : "Preparing the link…"}
            </p>
          )}
          <p role="status">{copied}</p>
          {preview?.info && !failing && (
            <>
              <h3>About this image</h3>
              <dl class="facts" data-testid="url-facts">
                <dt>Size</dt>
                <dd>
                  {preview.info.width} × {preview.info.height} px
                </dd>
                <dt>Format</dt>
                <dd>{preview.info.format?.toUpperCase()}</dd>
                {preview.info.animated && (
                  <>
                    <dt>Frames</dt>
                    <dd>{preview.info.frames}</dd>
                  </>
                )}
              </dl>
            </>
          )}
          <h3>Responsive snippet</h3>
          <div class="field">
            <label for="preset">Preset</label>
            <select id="preset" value={preset} onChange={(e) => setPreset(e.currentTarget.value)}>
              <option value="">The steps above</option>
              {presets.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
          {snippet && !failing ? (
            <>
              <pre class="snippet" tabIndex={0} aria-label="srcset snippet" data-testid="srcset">
                {snippet}
              </pre>
              <button type="button" onClick={() => copy(snippet, "Snippet")}>
                Copy snippet
              </button>
            </>
          ) : (
            <p class="hint">{failing ? "No snippet while the steps have an error." : "Preparing the snippet…"}</p>
          )}
        </div>
      </div>
    </section>
  );
}

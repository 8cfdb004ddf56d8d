import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { AssetDto } from "@media-platform/client";
import { titleOf } from "../components/thumb";
import { mediaHref, mediaPath } from "../media";
import { href } from "../route";
import { client, describeError, settings } from "../session";

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
  url: string;
  signed: boolean;
  objectUrl?: string;
  xCache?: string | null;
  contentType?: string | null;
  bytes?: number;
  width?: number;
  height?: number;
  problem?: string;
  fieldErrors?: { path: string; message: string }[];
  info?: Record<string, unknown>;
}

/** The preview waits for this pause in changes (each change is a render on the media service). */
const PREVIEW_DEBOUNCE_MS = 400;
const SRCSET_WIDTHS = [320, 640, 960, 1280];

let nextKey = 0;

/** A starting value for a parameter the chain must carry: its default, else a value in range. */
function initialValue(p: CatalogParam): string {
  if (p.default !== null) return String(p.default);
  if (p.type === "enum") return p.values?.[0] ?? "";
  if (p.type === "color") return "ffffff";
  if (p.type === "text") return "";
  if (p.name === "width" || p.name === "height" || p.name === "size") return "400";
  const min = p.min ?? 0;
  return String(p.exclusiveMin ? min + (p.type === "integer" ? 1 : 0.1) : Math.max(min, Math.min(1, p.max ?? 1)));
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

function ParamControl({
  stepKey,
  param,
  value,
  error,
  onChange,
}: {
  stepKey: number;
  param: CatalogParam;
  value: string | undefined;
  error?: string;
  onChange: (value: string | undefined) => void;
}) {
  const id = `s${stepKey}-${param.name}`;
  const set = value !== undefined;
  const shown = value ?? (param.default !== null ? String(param.default) : initialValue(param));
  const describedBy = `${id}-range${error ? ` ${id}-error` : ""}`;
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
    const number = keyword === undefined ? shown : param.default !== null ? String(param.default) : initialValue(param);
    control = (
      <span class="slider">
        {param.keywords && (
          <select
            aria-label={`${param.name} kind`}
            value={keyword ?? ""}
            disabled={!set}
            onChange={(e) => onChange(e.currentTarget.value || number)}
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
            value={number}
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
            onChange={(e) => onChange(e.currentTarget.checked ? shown : undefined)}
            aria-label={`Set ${param.name}`}
          />
        )}
        <label for={id}>{param.name}</label>
      </div>
      {control}
      <small id={`${id}-range`}>
        {param.range}
        {param.default !== null ? ` (default ${param.default})` : ""}
      </small>
      {error && (
        <p id={`${id}-error`} class="error" role="alert" data-testid="param-error">
          {error}
        </p>
      )}
    </div>
  );
}

export function Studio({ id }: { id: string }) {
  const [asset, setAsset] = useState<AssetDto | null>(null);
  const [catalog, setCatalog] = useState<Catalog | null>(null);
  const [presets, setPresets] = useState<string[]>([]);
  const [preset, setPreset] = useState("");
  const [steps, setSteps] = useState<Step[]>([]);
  const [adding, setAdding] = useState("resize");
  const [preview, setPreview] = useState<Preview | null>(null);
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

  const byName = useMemo(() => new Map((catalog?.transformations ?? []).map((t) => [t.name, t])), [catalog]);
  const path = useMemo(() => {
    if (!asset) return null;
    const segments = steps.flatMap((s) => {
      const t = byName.get(s.name);
      return t ? [formatStep(t, s)] : [];
    });
    return mediaPath(asset, segments);
  }, [asset, steps, byName]);

  // Debounced: sign (the server holds the key) then fetch the rendition, reading X-Cache.
  useEffect(() => {
    if (!path) return;
    const mine = ++generation.current;
    const timer = setTimeout(async () => {
      let next: Preview;
      try {
        const { url, signed } = await client.signMediaUrl(path);
        next = { url, signed };
        const response = await fetch(url, { cache: "no-store" });
        if (response.ok) {
          const blob = await response.blob();
          next.objectUrl = URL.createObjectURL(blob);
          next.xCache = response.headers.get("X-Cache");
          next.contentType = response.headers.get("Content-Type");
          next.bytes = blob.size;
        } else {
          const problem = (await response.json().catch(() => ({}))) as {
            title?: string;
            detail?: string;
            errors?: { path: string; message: string }[];
          };
          next.problem = problem.detail ?? problem.title ?? `HTTP ${response.status}`;
          next.fieldErrors = problem.errors ?? [];
        }
        // The URL's facts, where the media service has an /info endpoint.
        const info = await fetch(`${settings.mediaUrl}/info${new URL(url).pathname}`).catch(() => null);
        if (info?.ok && info.headers.get("Content-Type")?.includes("json"))
          next.info = (await info.json()) as Record<string, unknown>;
      } catch (err) {
        next = { url: mediaHref(path), signed: false, problem: describeError(err) };
      }
      if (mine !== generation.current) {
        if (next.objectUrl) URL.revokeObjectURL(next.objectUrl);
        return;
      }
      setPreview((prev) => {
        if (prev?.objectUrl) URL.revokeObjectURL(prev.objectUrl);
        return next;
      });
    }, PREVIEW_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [path]);

  function addStep() {
    const t = byName.get(adding);
    if (!t) return;
    const values: Record<string, string> = {};
    for (const p of t.params) if (p.required) values[p.name] = initialValue(p);
    // A step that needs one of its optional parameters (resize: width or height) starts with the first.
    if (Object.keys(values).length === 0 && t.name === "resize" && t.params[0])
      values[t.params[0].name] = initialValue(t.params[0]);
    setSteps([...steps, { key: nextKey++, name: t.name, values }]);
  }

  const setValue = (key: number, name: string, value: string | undefined) =>
    setSteps((prev) =>
      prev.map((s) => {
        if (s.key !== key) return s;
        const values = { ...s.values };
        if (value === undefined) delete values[name];
        else values[name] = value;
        return { ...s, values };
      }),
    );

  const move = (index: number, by: number) =>
    setSteps((prev) => {
      const next = [...prev];
      const [step] = next.splice(index, 1);
      next.splice(index + by, 0, step!);
      return next;
    });

  /** A 400's errors name `<transformation>.<param>`: shown next to that control (the first such step). */
  function errorFor(step: Step, param?: string): string | undefined {
    const first = steps.find((s) => s.name === step.name);
    if (first?.key !== step.key) return undefined;
    const wanted = param ? `${step.name}.${param}` : step.name;
    return preview?.fieldErrors?.find((e) => e.path === wanted)?.message;
  }

  const srcset = useMemo(() => {
    if (!asset) return "";
    const base = preset
      ? [`preset:name=${preset}`]
      : steps.flatMap((s) => (byName.get(s.name) ? [formatStep(byName.get(s.name)!, s)] : []));
    const url = (w: number) => mediaHref(mediaPath(asset, [...base, `resize:width=${w}`]));
    return [
      `<img src="${url(640)}"`,
      `  srcset="${SRCSET_WIDTHS.map((w) => `${url(w)} ${w}w`).join(",\n          ")}"`,
      `  sizes="(max-width: 640px) 100vw, 640px" alt="">`,
    ].join("\n");
  }, [asset, preset, steps, byName]);

  async function copy(text: string, what: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(`${what} copied`);
    } catch {
      setCopied("Copy failed: select the text and copy it");
    }
  }

  if (!asset || !catalog) {
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

  return (
    <section class="studio" aria-labelledby="studio-title">
      <p>
        <a href={href.asset(id)}>← {titleOf(asset)}</a>
      </p>
      <h1 id="studio-title">URL studio</h1>
      <div class="studio-layout">
        <div class="chain">
          <h2>Steps</h2>
          <ol class="steps">
            {steps.map((step, index) => {
              const t = byName.get(step.name)!;
              return (
                <li key={step.key} class="step" data-step={step.name}>
                  <fieldset>
                    <legend>
                      {index + 1}. {step.name}
                    </legend>
                    <p class="hint">{t.description}</p>
                    {errorFor(step) && (
                      <p class="error" role="alert">
                        {errorFor(step)}
                      </p>
                    )}
                    {t.params.map((p) => (
                      <ParamControl
                        key={p.name}
                        stepKey={step.key}
                        param={p}
                        value={step.values[p.name]}
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
                      <button type="button" onClick={() => setSteps(steps.filter((s) => s.key !== step.key))}>
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
                  {t.name}
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
            {preview?.objectUrl &&
              `${preview.xCache ?? "?"} · ${preview.width ?? "…"} × ${preview.height ?? "…"} px · ${preview.contentType ?? ""} · ${preview.bytes?.toLocaleString("en")} bytes`}
          </p>
          {preview?.problem && (
            <p class="error" role="alert" data-testid="preview-problem">
              {preview.problem}
            </p>
          )}
          {unplaced.map((e) => (
            <p class="error" key={e.path}>
              {e.path}: {e.message}
            </p>
          ))}
          <h3>URL {preview?.signed ? "(signed)" : ""}</h3>
          <div class="url-row">
            <output class="url" data-testid="media-url" aria-label="Media URL">
              {preview?.url ?? mediaHref(path ?? "")}
            </output>
            <button type="button" onClick={() => copy(preview?.url ?? mediaHref(path ?? ""), "URL")}>
              Copy URL
            </button>
          </div>
          <p role="status">{copied}</p>
          {preview?.info && (
            <>
              <h3>Facts of this URL</h3>
              <dl class="facts">
                {Object.entries(preview.info).map(([k, v]) => (
                  <>
                    <dt>{k}</dt>
                    <dd>{typeof v === "object" ? JSON.stringify(v) : String(v)}</dd>
                  </>
                ))}
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
          <pre class="snippet" tabIndex={0} aria-label="srcset snippet">
            {srcset}
          </pre>
          <button type="button" onClick={() => copy(srcset, "Snippet")}>
            Copy snippet
          </button>
        </div>
      </div>
    </section>
  );
}

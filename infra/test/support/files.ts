// Loading and interpreting the deployment files the way their real consumers do (docker
// compose, kubectl/kustomize, GitHub Actions, docker build), so that the checks below can be
// written against plain data.
import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export const REPO = path.resolve(__dirname, "../../..");
export const repoPath = (...parts: string[]): string => path.join(REPO, ...parts);
export const readRepoFile = (rel: string): string => fs.readFileSync(repoPath(rel), "utf8");

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** One YAML document; `<<` merge keys resolved as docker compose does. Throws on YAML errors. */
export function parseYamlStrict(text: string): Json {
  const docs = parseAllDocuments(text, { merge: true, uniqueKeys: true });
  if (Array.isArray(docs) && docs.length !== 1) throw new Error(`expected one YAML document, found ${docs.length}`);
  const doc = Array.isArray(docs) ? docs[0] : docs;
  if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join("; "));
  return doc.toJS({ maxAliasCount: 100 });
}

/** Every document of a multi-document YAML file (empty documents dropped). Throws on YAML errors. */
export function parseYamlDocuments(text: string): Json[] {
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const out: Json[] = [];
  for (const doc of list) {
    if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join("; "));
    const value = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

export { parseYaml };

// ---------------------------------------------------------------------------------------------
// docker compose variable interpolation (compose spec "Interpolation")

/**
 * Interpolates `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`, `${VAR?err}`,
 * `${VAR:+alt}`, `${VAR+alt}`, `$VAR` and `$$` with `vars` (not process.env: the files are
 * checked as `docker compose up` sees them without a .env file). Throws for `:?`/`?` errors and
 * unterminated expressions.
 */
export function interpolate(value: string, vars: Record<string, string> = {}): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch !== "$") {
      out += ch;
      continue;
    }
    const next = value[i + 1];
    if (next === "$") {
      out += "$";
      i++;
      continue;
    }
    if (next === "{") {
      let depth = 1;
      let j = i + 2;
      for (; j < value.length && depth > 0; j++) {
        if (value[j] === "{") depth++;
        else if (value[j] === "}") depth--;
      }
      if (depth !== 0) throw new Error(`unterminated \${ in ${JSON.stringify(value)}`);
      const expr = value.slice(i + 2, j - 1);
      out += expand(expr, vars);
      i = j - 1;
      continue;
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(value.slice(i + 1));
    if (m) {
      out += vars[m[0]] ?? "";
      i += m[0].length;
      continue;
    }
    out += ch;
  }
  return out;
}

function expand(expr: string, vars: Record<string, string>): string {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([\s\S]*))?$/.exec(expr);
  if (!m) throw new Error(`bad interpolation \${${expr}}`);
  const [, name, op, arg = ""] = m;
  const set = Object.prototype.hasOwnProperty.call(vars, name);
  const val = vars[name];
  const nonEmpty = set && val !== "";
  switch (op) {
    case undefined:
      return val ?? "";
    case ":-":
      return nonEmpty ? val : interpolate(arg, vars);
    case "-":
      return set ? val : interpolate(arg, vars);
    case ":?":
      if (!nonEmpty) throw new Error(`${name}: ${arg || "required"}`);
      return val;
    case "?":
      if (!set) throw new Error(`${name}: ${arg || "required"}`);
      return val;
    case ":+":
      return nonEmpty ? interpolate(arg, vars) : "";
    case "+":
      return set ? interpolate(arg, vars) : "";
    default:
      throw new Error(`bad interpolation operator ${op}`);
  }
}

/** A compose service's `environment` (map or list form), interpolated. */
export function composeEnvironment(service: Json, vars: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  const raw = service?.environment;
  if (raw === undefined || raw === null) return env;
  if (Array.isArray(raw)) {
    for (const item of raw) {
      const s = String(item);
      const eq = s.indexOf("=");
      if (eq < 0) continue; // "VAR" alone = taken from the host: unset here
      env[s.slice(0, eq)] = interpolate(s.slice(eq + 1), vars);
    }
  } else {
    for (const [k, v] of Object.entries(raw)) {
      if (v === null || v === undefined) continue;
      env[k] = interpolate(String(v), vars);
    }
  }
  return env;
}

/** Parses compose port entries ("8080:80", "127.0.0.1:9000:9000", {target, published}). */
export function composePorts(
  service: Json,
  vars: Record<string, string> = {},
): Array<{ host?: number; container: number }> {
  const out: Array<{ host?: number; container: number }> = [];
  for (const entry of service?.ports ?? []) {
    if (typeof entry === "object") {
      out.push({
        container: Number(entry.target),
        host: entry.published !== undefined ? Number(interpolate(String(entry.published), vars)) : undefined,
      });
      continue;
    }
    const s = interpolate(String(entry), vars).replace(/\/(tcp|udp)$/, "");
    const parts = s.split(":");
    const container = Number(parts[parts.length - 1]);
    const host = parts.length >= 2 ? Number(parts[parts.length - 2]) : undefined;
    out.push({ container, host });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Dockerfiles

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}
export interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}
export interface Dockerfile {
  args: Record<string, string>; // global ARGs (before the first FROM) with defaults
  stages: Stage[];
}

/** Splits a Dockerfile into instructions (continuations joined, comments and parser directives dropped). */
export function parseDockerfile(text: string): Dockerfile {
  const lines = text.split(/\r?\n/);
  const instructions: Instruction[] = [];
  let buf = "";
  let start = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    if (buf === "" && /^\s*(#|$)/.test(raw)) continue;
    if (buf !== "" && /^\s*#/.test(raw)) continue; // comment lines inside a continuation
    if (buf === "") start = i + 1;
    if (/\\\s*$/.test(raw)) {
      buf += raw.replace(/\\\s*$/, " ");
      continue;
    }
    buf += raw;
    const m = /^\s*([A-Za-z]+)\s*([\s\S]*)$/.exec(buf);
    if (m) instructions.push({ keyword: m[1].toUpperCase(), args: m[2].trim(), line: start });
    buf = "";
  }
  if (buf.trim() !== "") throw new Error("Dockerfile ends inside a line continuation");
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === "FROM") {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`line ${ins.line}: cannot parse FROM ${ins.args}`);
      stages.push({ from: m[1], name: m[2], instructions: [] });
      continue;
    }
    if (stages.length === 0) {
      if (ins.keyword !== "ARG") throw new Error(`line ${ins.line}: ${ins.keyword} before the first FROM`);
      const [k, v = ""] = ins.args.split("=");
      args[k.trim()] = v.trim().replace(/^"(.*)"$/, "$1");
      continue;
    }
    stages[stages.length - 1].instructions.push(ins);
  }
  return { args, stages };
}

/** `FROM ${NODE_IMAGE}` resolved against the global ARG defaults (and earlier stage names). */
export function resolveFrom(df: Dockerfile, stage: Stage): string {
  return stage.from.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => {
    if (!(name in df.args)) throw new Error(`FROM uses undefined ARG ${name}`);
    return df.args[name];
  });
}

/** Key/value pairs of ENV instructions (`ENV A=1 B="2"`, and the legacy `ENV A 1`). */
export function parseEnvInstruction(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!args.includes("=")) {
    const [k, ...rest] = args.split(/\s+/);
    out[k] = rest.join(" ");
    return out;
  }
  const re = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(args)) !== null) {
    let v = m[2];
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
    out[m[1]] = v;
  }
  return out;
}

/** ENV of a stage (what the running container starts with, before compose/k8s add theirs). */
export function stageEnv(stage: Stage): Record<string, string> {
  let env: Record<string, string> = {};
  for (const ins of stage.instructions) if (ins.keyword === "ENV") env = { ...env, ...parseEnvInstruction(ins.args) };
  return env;
}

/** JSON (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD, or null for the shell form. */
export function execForm(args: string): string[] | null {
  const t = args.trim();
  if (!t.startsWith("[")) return null;
  const parsed: unknown = JSON.parse(t);
  if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === "string")) throw new Error(`bad exec form ${t}`);
  return parsed as string[];
}

// ---------------------------------------------------------------------------------------------
// .dockerignore (Docker's rules: Go filepath.Match per segment, `**` any number of segments,
// later `!` lines re-include)

function globToRegex(pattern: string): RegExp {
  let re = "";
  const segs = pattern.split("/");
  segs.forEach((seg, idx) => {
    if (seg === "**") {
      re += idx === segs.length - 1 ? ".*" : "(?:.*/)?";
      return;
    }
    for (const c of seg) {
      if (c === "*") re += "[^/]*";
      else if (c === "?") re += "[^/]";
      else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
    if (idx < segs.length - 1) re += "/";
  });
  // A pattern matching a directory excludes everything below it.
  return new RegExp(`^${re}(?:/.*)?$`);
}

export function dockerignoreMatcher(text: string): (rel: string) => boolean {
  const rules = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const negate = l.startsWith("!");
      const p = path.posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, ""));
      return { negate, re: globToRegex(p) };
    });
  return (rel: string) => {
    const p = path.posix.normalize(rel).replace(/^\.\//, "").replace(/\/$/, "");
    let excluded = false;
    for (const r of rules) if (r.re.test(p)) excluded = !r.negate;
    return excluded;
  };
}

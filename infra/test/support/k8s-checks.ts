import fs from "node:fs";
import path from "node:path";
import { SERVICES, STORAGE_PRODUCTION, serviceEnvProblems, type ServiceName } from "./env-rules";
import { imageEnv } from "./dockerfile-checks";
import { parseYamlDocuments, parseYamlStrict, repoPath, type Json } from "./files";

export const K8S_DIR = "infra/k8s";

export interface Manifests {
  kustomization: Json;
  /** file name (relative to infra/k8s) -> its documents */
  files: Record<string, Json[]>;
}

export function loadManifests(dir = repoPath(K8S_DIR)): Manifests {
  const files: Record<string, Json[]> = {};
  let kustomization: Json = null;
  for (const f of fs.readdirSync(dir).sort()) {
    if (!/\.ya?ml$/.test(f)) continue;
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    if (/^kustomization\.ya?ml$/.test(f)) kustomization = parseYamlStrict(text);
    else files[f] = parseYamlDocuments(text);
  }
  return { kustomization, files };
}

const NAMESPACED = new Set([
  "Deployment",
  "Service",
  "ConfigMap",
  "Secret",
  "HorizontalPodAutoscaler",
  "PodDisruptionBudget",
  "Ingress",
  "ServiceAccount",
  "Job",
]);

const objects = (m: Manifests): Json[] => Object.values(m.files).flat();
const ofKind = (m: Manifests, kind: string): Json[] => objects(m).filter((o) => o?.kind === kind);

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

function decodeSecret(secret: Json): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(String(v), "base64").toString("utf8");
  for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] = String(v);
  return out;
}

/** The environment a container starts with: image ENV, then envFrom (in order), then env. Problems for dangling references. */
export function containerEnv(
  m: Manifests,
  container: Json,
  image: Record<string, string>,
): { env: Record<string, string>; problems: string[] } {
  const problems: string[] = [];
  const env: Record<string, string> = { ...image };
  const configMap = (name: string) => ofKind(m, "ConfigMap").find((c) => c.metadata?.name === name);
  const secret = (name: string) => ofKind(m, "Secret").find((c) => c.metadata?.name === name);
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) {
      const cm = configMap(from.configMapRef.name);
      if (!cm) problems.push(`envFrom ConfigMap ${from.configMapRef.name} does not exist`);
      else for (const [k, v] of Object.entries(cm.data ?? {})) env[`${from.prefix ?? ""}${k}`] = String(v);
    } else if (from.secretRef) {
      const s = secret(from.secretRef.name);
      if (!s) problems.push(`envFrom Secret ${from.secretRef.name} does not exist`);
      else for (const [k, v] of Object.entries(decodeSecret(s))) env[`${from.prefix ?? ""}${k}`] = v;
    } else problems.push(`envFrom entry without configMapRef/secretRef`);
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const cm = configMap(ref.name);
      if (!cm || !(ref.key in (cm.data ?? {})))
        problems.push(`${e.name}: ConfigMap ${ref.name} key ${ref.key} does not exist`);
      else env[e.name] = String(cm.data[ref.key]);
    } else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const s = secret(ref.name);
      if (!s || !(ref.key in decodeSecret(s)))
        problems.push(`${e.name}: Secret ${ref.name} key ${ref.key} does not exist`);
      else env[e.name] = decodeSecret(s)[ref.key];
    } else problems.push(`${e.name}: neither value nor a ConfigMap/Secret reference`);
  }
  return { env, problems };
}

/** Resolves a probe/Service port (number or name) against a container's ports. */
function containerPort(container: Json, port: number | string): number | undefined {
  for (const p of container.ports ?? []) {
    if (typeof port === "number" ? p.containerPort === port : p.name === port) return p.containerPort;
  }
  return undefined;
}

const QUANTITY = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/;
export function parseQuantity(q: string | number): number {
  const m = QUANTITY.exec(String(q));
  if (!m) throw new Error(`bad quantity ${q}`);
  const n = Number(m[1]);
  const mult: Record<string, number> = {
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
  };
  return n * (m[2] ? mult[m[2]] : 1);
}

/** Problems of the whole infra/k8s folder; [] = fine. */
export function k8sProblems(m: Manifests, dir = repoPath(K8S_DIR)): string[] {
  const problems: string[] = [];
  const k = m.kustomization;
  if (!k || k.kind !== "Kustomization") return ["no kustomization.yaml"];
  const resources: string[] = k.resources ?? [];
  for (const r of resources)
    if (!fs.existsSync(path.join(dir, r))) problems.push(`kustomization resource ${r} does not exist`);
  for (const f of Object.keys(m.files))
    if (!resources.includes(f)) problems.push(`${f} is not listed in kustomization resources`);
  const ns = k.namespace;
  const namespaces = ofKind(m, "Namespace").map((n) => n.metadata?.name);
  if (!ns || !namespaces.includes(ns))
    problems.push(`kustomization namespace ${ns} is not a Namespace of the manifests`);

  for (const [file, docs] of Object.entries(m.files)) {
    docs.forEach((o, i) => {
      const where = `${file}#${i + 1}`;
      if (!o.apiVersion || !o.kind || !o.metadata?.name)
        problems.push(`${where}: missing apiVersion/kind/metadata.name`);
      if (NAMESPACED.has(o.kind) && o.metadata?.namespace !== undefined && o.metadata.namespace !== ns)
        problems.push(`${where}: namespace ${o.metadata.namespace}, kustomization uses ${ns}`);
    });
  }
  for (const kind of new Set(objects(m).map((o) => o.kind))) {
    const names = ofKind(m, kind).map((o) => o.metadata?.name);
    for (const n of new Set(names))
      if (names.filter((x) => x === n).length > 1) problems.push(`two ${kind}s named ${n}`);
  }

  const deployments = ofKind(m, "Deployment");
  const services = ofKind(m, "Service");
  const kustomizeImages = new Set((k.images ?? []).map((i: Json) => i.name));
  const envByService: Partial<Record<ServiceName, Record<string, string>>> = {};

  for (const name of ["management", "media"] as ServiceName[]) {
    const d = deployments.find((x) => x.metadata?.name === name);
    if (!d) {
      problems.push(`Deployment ${name} missing`);
      continue;
    }
    const rule = SERVICES[name];
    const where = `Deployment ${name}`;
    const tplLabels = d.spec?.template?.metadata?.labels;
    if (!matches(d.spec?.selector?.matchLabels, tplLabels))
      problems.push(`${where}: selector does not match its pod template labels`);
    const podSec = d.spec?.template?.spec?.securityContext ?? {};
    const containers: Json[] = d.spec?.template?.spec?.containers ?? [];
    const c = containers.find((x) => x.name === name);
    if (!c) {
      problems.push(`${where}: no container named ${name}`);
      continue;
    }
    const image = String(c.image ?? "").replace(/[:@].*$/, "");
    if (!kustomizeImages.has(image))
      problems.push(`${where}: image ${image} is not in kustomization images (cannot be retargeted)`);
    const { env, problems: envRefProblems } = containerEnv(m, c, imageEnv(name));
    envByService[name] = env;
    problems.push(...envRefProblems.map((p) => `${where}: ${p}`));
    problems.push(...serviceEnvProblems(rule, env).map((p) => `${where}: ${p}`));

    const port = Number(env[rule.portVariable]);
    if (containerPort(c, port) !== port) problems.push(`${where}: no containerPort ${port} (${rule.portVariable})`);
    const probes: Array<[string, string]> = [
      ["readinessProbe", "/readyz"],
      ["livenessProbe", "/healthz"],
    ];
    for (const [probe, expectedPath] of probes) {
      const p = c[probe]?.httpGet;
      if (!p) problems.push(`${where}: no ${probe}.httpGet`);
      else {
        if (p.path !== expectedPath) problems.push(`${where}: ${probe} path ${p.path}, expected ${expectedPath}`);
        const resolved = containerPort(c, p.port);
        if (resolved === undefined) problems.push(`${where}: ${probe} port ${p.port} is not a container port`);
        else if (resolved !== port)
          problems.push(`${where}: ${probe} port ${resolved}, the service listens on ${port}`);
      }
    }
    if (c.startupProbe?.httpGet && containerPort(c, c.startupProbe.httpGet.port) !== port)
      problems.push(`${where}: startupProbe port does not resolve to ${port}`);
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    if (req.cpu === undefined || req.memory === undefined)
      problems.push(`${where}: resources.requests needs cpu and memory`);
    if (lim.memory === undefined) problems.push(`${where}: resources.limits.memory missing`);
    for (const r of ["cpu", "memory"]) {
      if (req[r] !== undefined && lim[r] !== undefined && parseQuantity(req[r]) > parseQuantity(lim[r]))
        problems.push(`${where}: ${r} request above limit`);
    }
    const sec = { ...podSec, ...(c.securityContext ?? {}) };
    if (sec.runAsNonRoot !== true) problems.push(`${where}: runAsNonRoot is not true`);
    if (sec.runAsUser === 0) problems.push(`${where}: runAsUser 0`);
    const volumes = new Set((d.spec?.template?.spec?.volumes ?? []).map((v: Json) => v.name));
    const mounts: Json[] = c.volumeMounts ?? [];
    for (const vm of mounts) if (!volumes.has(vm.name)) problems.push(`${where}: volumeMount ${vm.name} has no volume`);
    if (c.securityContext?.readOnlyRootFilesystem) {
      const mounted = (p: string) => mounts.some((vm) => p === vm.mountPath || p.startsWith(`${vm.mountPath}/`));
      if (!mounted("/tmp")) problems.push(`${where}: read-only root filesystem without a /tmp volume (temp files)`);
      if (name === "management" && env.DATA_DIR && !mounted(env.DATA_DIR))
        problems.push(`${where}: DATA_DIR ${env.DATA_DIR} is on the read-only root filesystem`);
    }
    if (name === "media") {
      if (
        lim.memory !== undefined &&
        Number(env.CACHE_MEMORY_BYTES ?? 256 * 1024 * 1024) > parseQuantity(lim.memory) / 2
      )
        problems.push(
          `${where}: CACHE_MEMORY_BYTES ${env.CACHE_MEMORY_BYTES} is more than half the memory limit ${lim.memory}`,
        );
      const grace = Number(d.spec?.template?.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
      if (grace <= Number(env.MEDIA_REQUEST_TIMEOUT_MS ?? 30000))
        problems.push(`${where}: terminationGracePeriodSeconds shorter than MEDIA_REQUEST_TIMEOUT_MS`);
    }
    // URL targets: in-cluster hosts must be Services of these manifests, on a port they expose.
    for (const variable of ["DATABASE_URL", "REDIS_URL", "S3_ENDPOINT"]) {
      const value = env[variable];
      if (!value) continue;
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        continue; // reported by the env rules
      }
      const host = url.hostname;
      const short = host.split(".")[0];
      const inCluster = !host.includes(".") || host.endsWith(".svc") || host.includes(".svc.");
      if (!inCluster) continue;
      const svc = services.find((s) => s.metadata?.name === short);
      if (!svc) problems.push(`${where}: ${variable} host ${host} is not a Service of the manifests`);
      else {
        const p = Number(url.port || (url.protocol === "https:" ? 443 : 80));
        if (!(svc.spec?.ports ?? []).some((sp: Json) => sp.port === p))
          problems.push(`${where}: ${variable} port ${p} is not a port of Service ${short}`);
      }
    }
  }
  const me = envByService.management;
  const md = envByService.media;
  if (me && md)
    for (const key of STORAGE_PRODUCTION)
      if (me[key] !== md[key]) problems.push(`storage differs: management ${key}=${me[key]}, media ${key}=${md[key]}`);

  // Services select a Deployment's pods and target a port its container has.
  for (const s of services) {
    const where = `Service ${s.metadata?.name}`;
    if (s.spec?.type === "ExternalName") {
      if (!s.spec.externalName) problems.push(`${where}: ExternalName without externalName`);
      continue;
    }
    const targets = deployments.filter((d) => matches(s.spec?.selector, d.spec?.template?.metadata?.labels));
    if (targets.length !== 1) {
      problems.push(`${where}: selector matches ${targets.length} Deployments`);
      continue;
    }
    for (const p of s.spec?.ports ?? []) {
      const target = p.targetPort ?? p.port;
      const ok = (targets[0].spec?.template?.spec?.containers ?? []).some(
        (c: Json) => containerPort(c, target) !== undefined,
      );
      if (!ok) problems.push(`${where}: targetPort ${target} is not a port of Deployment ${targets[0].metadata?.name}`);
    }
  }
  for (const pdb of ofKind(m, "PodDisruptionBudget")) {
    if (!deployments.some((d) => matches(pdb.spec?.selector?.matchLabels, d.spec?.template?.metadata?.labels)))
      problems.push(`PodDisruptionBudget ${pdb.metadata?.name}: selector matches no Deployment`);
  }
  const hpas = ofKind(m, "HorizontalPodAutoscaler");
  if (!hpas.some((h) => h.spec?.scaleTargetRef?.name === "media"))
    problems.push("no HorizontalPodAutoscaler for media");
  for (const h of hpas) {
    const where = `HorizontalPodAutoscaler ${h.metadata?.name}`;
    const ref = h.spec?.scaleTargetRef ?? {};
    const d = deployments.find((x) => x.metadata?.name === ref.name);
    if (ref.kind !== "Deployment" || !d) {
      problems.push(`${where}: scaleTargetRef ${ref.kind}/${ref.name} does not exist`);
      continue;
    }
    if (!(h.spec?.minReplicas >= 1 && h.spec?.maxReplicas >= h.spec?.minReplicas))
      problems.push(`${where}: replicas ${h.spec?.minReplicas}..${h.spec?.maxReplicas}`);
    for (const metric of h.spec?.metrics ?? []) {
      if (metric.type !== "Resource") continue;
      const resource = metric.resource?.name;
      const missing = (d.spec?.template?.spec?.containers ?? []).filter(
        (c: Json) => c.resources?.requests?.[resource] === undefined,
      );
      if (missing.length)
        problems.push(
          `${where}: scales on ${resource} utilisation but ${missing.map((c: Json) => c.name).join(", ")} has no ${resource} request`,
        );
    }
  }
  return problems;
}

/** A kustomize overlay folder under infra/k8s, rendered as the checks need it (no kustomize binary here). */
export interface RenderedOverlay {
  /** The base's manifests with the overlay's patches applied and its resources added (as `<overlay>/<file>`). */
  manifests: Manifests;
  problems: string[];
}

/**
 * Renders an overlay the way kustomize would for what overlays here use: `resources` (the base
 * folder `..` and files beside the kustomization) and `patches` by `path` (strategic merge of maps
 * onto the base object of the same kind and name). A patch with a list, or anything else an
 * overlay declares, is a problem rather than a silent difference from kustomize.
 */
export function renderOverlay(overlay: string, baseDir = repoPath(K8S_DIR)): RenderedOverlay {
  const dir = path.join(baseDir, overlay);
  const problems: string[] = [];
  const k = parseYamlStrict(fs.readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
  const base = loadManifests(baseDir);
  const manifests: Manifests = structuredClone(base);
  const known = new Set(["apiVersion", "kind", "resources", "patches"]);
  for (const key of Object.keys(k ?? {}))
    if (!known.has(key)) problems.push(`${overlay}: ${key} is not rendered by this check`);
  for (const r of k.resources ?? []) {
    if (r === "..") continue;
    const file = path.join(dir, r);
    if (!fs.existsSync(file)) {
      problems.push(`${overlay}: resource ${r} does not exist`);
      continue;
    }
    manifests.files[`${overlay}/${r}`] = parseYamlDocuments(fs.readFileSync(file, "utf8"));
    manifests.kustomization.resources.push(`${overlay}/${r}`);
  }
  if (!(k.resources ?? []).includes("..")) problems.push(`${overlay}: does not build on the base (..)`);
  for (const p of k.patches ?? []) {
    const file = path.join(dir, String(p.path));
    if (!p.path || !fs.existsSync(file)) {
      problems.push(`${overlay}: patch ${p.path} does not exist`);
      continue;
    }
    const patch = parseYamlStrict(fs.readFileSync(file, "utf8"));
    const target = Object.values(manifests.files)
      .flat()
      .find((o) => o.kind === patch.kind && o.metadata?.name === patch.metadata?.name);
    if (!target) {
      problems.push(`${overlay}: patch ${p.path} targets ${patch.kind} ${patch.metadata?.name}, which the base lacks`);
      continue;
    }
    mergeMaps(target, patch, `${overlay}/${p.path}`, problems);
  }
  return { manifests, problems };
}

function mergeMaps(target: Json, patch: Json, where: string, problems: string[]): void {
  for (const [key, value] of Object.entries(patch)) {
    if (Array.isArray(value)) problems.push(`${where}: ${key} is a list (not rendered by this check)`);
    else if (value !== null && typeof value === "object" && typeof target[key] === "object")
      mergeMaps(target[key], value, where, problems);
    else target[key] = value;
  }
}

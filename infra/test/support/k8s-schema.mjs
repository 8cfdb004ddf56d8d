// Validates Kubernetes objects against the API's OpenAPI schemas (kubernetes-models, an ES
// module, hence a separate script the CommonJS jest tests run with node). Reads a JSON array of
// objects on stdin, prints a JSON array of problems ("Kind/name: message").
import { readFileSync } from "node:fs";
import process from "node:process";

const objects = JSON.parse(readFileSync(0, "utf8"));
const problems = [];
for (const o of objects) {
  const where = `${o?.kind}/${o?.metadata?.name}`;
  const apiVersion = String(o?.apiVersion ?? "");
  const group = apiVersion.includes("/") ? apiVersion : `v1`;
  let Model;
  try {
    ({ [o.kind]: Model } = await import(`kubernetes-models/${group}/${o.kind}`));
  } catch {
    problems.push(`${where}: unknown apiVersion/kind ${apiVersion} ${o?.kind}`);
    continue;
  }
  try {
    new Model(o).validate();
  } catch (err) {
    problems.push(`${where}: ${String(err?.message ?? err)}`);
  }
}
process.stdout.write(JSON.stringify(problems));

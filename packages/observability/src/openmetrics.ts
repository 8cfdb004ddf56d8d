// The OpenMetrics exposition of a registry, for scrapers that ask for it (Accept:
// application/openmetrics-text): the same series, plus the histograms' exemplars (trace ids).
import { Registry, type Metric } from "prom-client";

type Exposed = { get(): unknown; name: string; help: string; type: string; aggregator?: string };

const OPENMETRICS = "application/openmetrics-text";

/**
 * A renderer answering the Prometheus text format, or OpenMetrics when `accept` asks for it. The
 * OpenMetrics registry holds a proxy per metric: prom-client renames the counters it prints there
 * (strips `_total`), which must not touch the objects the text format prints.
 */
export function exposition(registry: Registry) {
  let openMetrics: Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE> | undefined;
  const proxied = new Set<string>();
  return async (accept: string | undefined): Promise<{ body: string; contentType: string }> => {
    if (!accept?.includes(OPENMETRICS)) return { body: await registry.metrics(), contentType: registry.contentType };
    if (!openMetrics) {
      openMetrics = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
      openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    }
    openMetrics.setDefaultLabels(defaultLabels(registry));
    for (const metric of registry.getMetricsAsArray() as unknown as Exposed[]) {
      if (proxied.has(metric.name)) continue;
      proxied.add(metric.name);
      const proxy = {
        name: metric.name,
        help: metric.help,
        type: metric.type,
        aggregator: metric.aggregator,
        get: async () => ({ ...((await metric.get()) as object), name: proxy.name }),
        reset: () => undefined,
      };
      openMetrics.registerMetric(proxy as unknown as Metric);
    }
    return { body: await openMetrics.metrics(), contentType: openMetrics.contentType };
  };
}

function defaultLabels(registry: Registry): Record<string, string> {
  return (registry as unknown as { _defaultLabels?: Record<string, string> })._defaultLabels ?? {};
}

import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { setActiveTracer } from './active.ts';
import type { SamplerSetting, TracingSettings } from './settings.ts';

/** Tracing started in this process: `stop` exports what is still buffered, then turns it off. */
export interface RunningTracing {
  stop(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK as `settings` say: a Node tracer provider (its async-context
 * manager, so a request's calls see its span), the W3C trace-context propagator, a batching
 * processor (the standard OTEL_BSP_* variables apply) and the exporter. The SDK's packages are
 * imported here, on demand: a process with tracing off never loads them.
 */
export async function startTracing(settings: TracingSettings, version: string): Promise<RunningTracing> {
  const [node, base, resources, core] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    sampler: samplerOf(settings.sampler, base),
    spanProcessors: [new base.BatchSpanProcessor(await exporterOf(settings, base))],
  });
  provider.register({ propagator: new core.W3CTraceContextPropagator() });
  setActiveTracer(provider.getTracer('event-feed', version));
  return {
    async stop() {
      setActiveTracer(undefined);
      await provider.shutdown();
    },
  };
}

type Base = typeof import('@opentelemetry/sdk-trace-base');

async function exporterOf(settings: TracingSettings, base: Base): Promise<SpanExporter> {
  if (settings.exporter === 'console') return new base.ConsoleSpanExporter();
  // Both read the standard OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and _COMPRESSION themselves.
  const { OTLPTraceExporter } =
    settings.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ url: settings.url });
}

function samplerOf(setting: SamplerSetting, base: Base): Sampler {
  switch (setting.name) {
    case 'always_on':
      return new base.AlwaysOnSampler();
    case 'always_off':
      return new base.AlwaysOffSampler();
    case 'traceidratio':
      return new base.TraceIdRatioBasedSampler(setting.ratio);
    case 'parentbased_always_on':
      return new base.ParentBasedSampler({ root: new base.AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new base.ParentBasedSampler({ root: new base.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new base.ParentBasedSampler({ root: new base.TraceIdRatioBasedSampler(setting.ratio) });
  }
}

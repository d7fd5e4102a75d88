/**
 * What the standard OpenTelemetry variables ask of tracing, and nothing else: the service reads
 * no variable of its own for it. Off unless OTEL_TRACES_EXPORTER names an exporter (the SDK's own
 * default is `otlp`; here tracing costs a request something, so it is asked for), and off whatever
 * it says under OTEL_SDK_DISABLED=true.
 */
export interface TracingSettings {
  exporter: 'otlp' | 'console';
  /** OTLP/HTTP: `http/protobuf` (the specification's default) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  /** Where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  url: string;
  serviceName: string;
  sampler: SamplerSetting;
}

export type SamplerSetting =
  | { name: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { name: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

type Env = Readonly<Record<string, string | undefined>>;

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
const DEFAULT_ENDPOINT = 'http://localhost:4318';
const DEFAULT_SERVICE_NAME = 'event-feed';

/** A variable's value, trimmed; undefined when unset or empty (the specification treats both alike). */
function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The tracing the environment asks for, or null for none. A value the service cannot honour (an
 * exporter, protocol or sampler it does not have, a ratio out of [0, 1]) fails the start with the
 * variable's name rather than being ignored: an operator who asked for traces would see none.
 */
export function tracingSettings(env: Env): TracingSettings | null {
  if (read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporters = (read(env, 'OTEL_TRACES_EXPORTER') ?? 'none')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (exporters.length === 0 || exporters.includes('none')) return null;
  if (exporters.length > 1) throw new Error('OTEL_TRACES_EXPORTER: one exporter at most (otlp, console or none)');
  const exporter = exporters[0];
  if (exporter !== 'otlp' && exporter !== 'console') {
    throw new Error(`OTEL_TRACES_EXPORTER: ${JSON.stringify(exporter)} is not supported (otlp, console or none)`);
  }
  const protocolName = read(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = read(env, protocolName) ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new Error(`${protocolName}: ${JSON.stringify(protocol)} is not supported (http/protobuf or http/json)`);
  }
  return {
    exporter,
    protocol,
    url: tracesUrl(env),
    serviceName: read(env, 'OTEL_SERVICE_NAME') ?? DEFAULT_SERVICE_NAME,
    sampler: sampler(env),
  };
}

/** Whether the environment asks for tracing, without failing on a bad value (the logger asks before the start checks them). */
export function tracingWanted(env: Env): boolean {
  try {
    return tracingSettings(env) !== null;
  } catch {
    return false;
  }
}

/** The specification's rule: the signal's own endpoint is used as is, the general one gets `/v1/traces`. */
function tracesUrl(env: Env): string {
  const own = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (own) return checkedUrl(own, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = checkedUrl(read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') ?? DEFAULT_ENDPOINT, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

function checkedUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`${name}: an http or https URL`);
  return value;
}

/** OTEL_TRACES_SAMPLER and its OTEL_TRACES_SAMPLER_ARG; the specification's default is parentbased_always_on. */
function sampler(env: Env): SamplerSetting {
  const name = (read(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  const known = SAMPLERS.find((candidate) => candidate === name);
  if (!known) throw new Error(`OTEL_TRACES_SAMPLER: ${JSON.stringify(name)} is not supported (${SAMPLERS.join(', ')})`);
  if (known !== 'traceidratio' && known !== 'parentbased_traceidratio') return { name: known };
  const arg = read(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new Error('OTEL_TRACES_SAMPLER_ARG: a ratio between 0 and 1');
  return { name: known, ratio };
}

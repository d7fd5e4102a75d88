import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tracingSettings, tracingWanted } from '../src/tracing/settings.ts';

describe('tracing settings from the standard OTEL_* variables', () => {
  it('is off by default, with none, and under OTEL_SDK_DISABLED=true', () => {
    assert.equal(tracingSettings({}), null);
    assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: 'none' }), null);
    assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), null);
    assert.equal(tracingWanted({}), false);
  });

  it('otlp: the specification defaults (http/protobuf, localhost:4318/v1/traces, parentbased_always_on)', () => {
    assert.deepEqual(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' }), {
      exporter: 'otlp',
      protocol: 'http/protobuf',
      url: 'http://localhost:4318/v1/traces',
      serviceName: 'event-feed',
      sampler: { name: 'parentbased_always_on' },
    });
  });

  it('the general endpoint gets /v1/traces, the traces endpoint is used as given', () => {
    const base = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' };
    assert.equal(tracingSettings(base)!.url, 'http://collector:4318/v1/traces');
    assert.equal(tracingSettings({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://x.example/t' })!.url, 'https://x.example/t');
  });

  it('http/json, the service name, a ratio sampler', () => {
    const settings = tracingSettings({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'feed-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
    })!;
    assert.equal(settings.protocol, 'http/json');
    assert.equal(settings.serviceName, 'feed-eu');
    assert.deepEqual(settings.sampler, { name: 'parentbased_traceidratio', ratio: 0.01 });
    assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: 'console' })!.exporter, 'console');
  });

  it('refuses what it cannot honour, naming the variable', () => {
    assert.throws(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER/);
    assert.throws(
      () => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
    assert.throws(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }), /OTEL_TRACES_SAMPLER/);
    assert.throws(
      () => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }),
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    assert.throws(
      () => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    assert.equal(tracingWanted({ OTEL_TRACES_EXPORTER: 'zipkin' }), false);
  });
});

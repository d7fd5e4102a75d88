/**
 * A real OTLP/HTTP trace receiver for the tests: POST /v1/traces in `application/x-protobuf`
 * (decoded here by a small reader of the protobuf wire format, the fields of
 * ExportTraceServiceRequest the tests look at) or `application/json`, every span kept flat.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: Array<{ name: string; attributes: Record<string, AttributeValue> }>;
  links: Array<{ traceId: string; spanId: string }>;
  serviceName: string;
  contentType: string;
}

export const SERVER = 2;
export const CLIENT = 3;

export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    requests++;
    const body = Buffer.concat(chunks);
    const type = String(req.headers['content-type'] ?? '');
    if (req.url !== '/v1/traces') return void res.writeHead(404).end();
    if (type.includes('json')) spans.push(...fromJson(JSON.parse(body.toString('utf8')), type));
    else spans.push(...fromProtobuf(body, type));
    res
      .writeHead(200, { 'content-type': type.includes('json') ? 'application/json' : 'application/x-protobuf' })
      .end(type.includes('json') ? '{}' : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- JSON (OTLP/HTTP JSON: ids in hex, enums as numbers) ---

interface JsonKeyValue {
  key: string;
  value: Record<string, unknown>;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    const v = value.stringValue ?? value.boolValue ?? value.intValue ?? value.doubleValue ?? null;
    out[key] = typeof v === 'string' && 'intValue' in value ? Number(v) : (v as AttributeValue);
  }
  return out;
}

function fromJson(request: { resourceSpans?: Array<Record<string, any>> }, contentType: string): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const serviceName = String(jsonAttributes(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss: Record<string, any>) =>
      (ss.spans ?? []).map((s: Record<string, any>) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e: Record<string, any>) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        links: (s.links ?? []).map((l: Record<string, any>) => ({ traceId: l.traceId, spanId: l.spanId })),
        serviceName,
        contentType,
      })),
    );
  });
}

// --- protobuf (the wire format: varints, length-delimited fields, fixed 64-bit) ---

type Field = { no: number; wire: number; value: bigint | Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const tag = Number(varint());
    const no = tag >> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, value: varint() });
    else if (wire === 1) {
      out.push({ no, wire, value: buf.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ no, wire, value: buf.subarray(at, at + length) });
      at += length;
    } else if (wire === 5) {
      out.push({ no, wire, value: buf.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`protobuf wire type ${wire} not expected`);
  }
  return out;
}

const bytesOf = (list: Field[], no: number) => list.filter((f) => f.no === no).map((f) => f.value as Buffer);
const first = (list: Field[], no: number) => list.find((f) => f.no === no)?.value;

function anyValue(buf: Buffer): AttributeValue {
  const f = fields(buf)[0];
  if (!f) return null;
  if (f.no === 1) return (f.value as Buffer).toString('utf8');
  if (f.no === 2) return f.value === 1n;
  if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
  if (f.no === 4) return (f.value as Buffer).readDoubleLE(0);
  return null;
}

function protoAttributes(list: Buffer[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list) {
    const f = fields(kv);
    const value = first(f, 2);
    out[(first(f, 1) as Buffer).toString('utf8')] = value ? anyValue(value as Buffer) : null;
  }
  return out;
}

const hex = (value: unknown) => (value ? (value as Buffer).toString('hex') : '');

function fromProtobuf(body: Buffer, contentType: string): ReceivedSpan[] {
  return bytesOf(fields(body), 1).flatMap((rsBytes) => {
    const rs = fields(rsBytes);
    const resource = first(rs, 1);
    const serviceName = String(resource ? (protoAttributes(bytesOf(fields(resource as Buffer), 1))['service.name'] ?? '') : '');
    return bytesOf(rs, 2).flatMap((ssBytes) =>
      bytesOf(fields(ssBytes), 2).map((spanBytes) => {
        const s = fields(spanBytes);
        return {
          traceId: hex(first(s, 1)),
          spanId: hex(first(s, 2)),
          parentSpanId: hex(first(s, 4)),
          name: ((first(s, 5) as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8'),
          kind: Number((first(s, 6) as bigint | undefined) ?? 0n),
          attributes: protoAttributes(bytesOf(s, 9)),
          events: bytesOf(s, 11).map((e) => {
            const ef = fields(e);
            return {
              name: ((first(ef, 2) as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8'),
              attributes: protoAttributes(bytesOf(ef, 3)),
            };
          }),
          links: bytesOf(s, 13).map((l) => {
            const lf = fields(l);
            return { traceId: hex(first(lf, 1)), spanId: hex(first(lf, 2)) };
          }),
          serviceName,
          contentType,
        };
      }),
    );
  });
}

import express, { Router } from 'express';
import cluster from 'node:cluster';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';
// Only the folder's path: the package's index loads the whole browser bundle into the server (~18 MB).
import getSwaggerUiPath from 'swagger-ui-dist/absolute-path.js';
import { asyncApiPath, asyncApiYamlPath, specText, specYamlPath } from '../contract/spec.ts';
import { serviceVersion } from '../contract/version.ts';
import { packageFile } from '../base/paths.ts';
import type { Store } from '../store/port.ts';

const READINESS_TIMEOUT_MS = 1500;
/**
 * How long one readiness check answers for: /readyz costs at most one query per this, however
 * often it is called, and is never staler than this (well under any balancer's probe period: an
 * outage is reported from the first probe after it).
 */
const READINESS_REUSE_MS = 100;

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>event-feed API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <p class="other-documents" style="font-family: sans-serif; margin: 1em 2em 0">
    This reference, to download: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1, also as <a href="/openapi.yaml">/openapi.yaml</a>).
    What the service sends, webhook deliveries and the event stream: <a href="/asyncapi.json">/asyncapi.json</a> (AsyncAPI 3, also as <a href="/asyncapi.yaml">/asyncapi.yaml</a>).
  </p>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });`;

/** Where `npm run build` packs the conformance kit (packConformanceKit). */
const CONFORMANCE_KIT = packageFile('dist/kit/event-feed-conformance.tgz');
/** Where `npm run build` packs the typed client, @event-feed/client (packPackage). */
const CLIENT_PACKAGE = packageFile('dist/client/event-feed-client.tgz');

/** The contract (OpenAPI and AsyncAPI), its reference page (bundled from node_modules, no CDN), health probes, the version, the conformance kit and the typed client. */
export function siteRouter(store: Store, lifecycle: { readonly draining: boolean }): Router {
  const router = Router();
  const yaml = readFileSync(specYamlPath, 'utf8');
  const asyncApiText = readFileSync(asyncApiPath, 'utf8');
  const asyncApiYaml = readFileSync(asyncApiYamlPath, 'utf8');

  router.get('/openapi.json', (_req, res) => void res.type('application/json').send(specText));
  router.get('/openapi.yaml', (_req, res) => void res.type('application/yaml').send(yaml));
  // What the service sends (webhook deliveries, the event stream), as AsyncAPI 3 (asyncApiDocument).
  router.get('/asyncapi.json', (_req, res) => void res.type('application/json').send(asyncApiText));
  router.get('/asyncapi.yaml', (_req, res) => void res.type('application/yaml').send(asyncApiYaml));
  router.get('/docs', (_req, res) => void res.type('html').send(DOCS_PAGE));
  router.get('/docs/init.js', (_req, res) => void res.type('application/javascript').send(DOCS_INIT));
  router.use('/docs/assets', express.static(getSwaggerUiPath(), { index: false }));

  // The kit of this deployment's own version, for QA without a clone (conformance/README.md).
  // Absent when the service runs from sources never built: the path then answers 404 like any other.
  if (existsSync(CONFORMANCE_KIT)) {
    const kit = readFileSync(CONFORMANCE_KIT);
    router.get(
      '/conformance/event-feed-conformance.tgz',
      (_req, res) =>
        void res
          .type('application/gzip')
          .set('Content-Disposition', `attachment; filename="event-feed-conformance-${serviceVersion().version}.tgz"`)
          .send(kit),
    );
  }
  // The typed client of this deployment's contract (client/README.md), the same way.
  if (existsSync(CLIENT_PACKAGE)) {
    const client = readFileSync(CLIENT_PACKAGE);
    router.get(
      '/client/event-feed-client.tgz',
      (_req, res) =>
        void res
          .type('application/gzip')
          .set('Content-Disposition', `attachment; filename="event-feed-client-${serviceVersion().version}.tgz"`)
          .send(client),
    );
  }

  // The process answers: nothing else is asked (a liveness probe that failed on the database would
  // restart every instance during a database outage, which a restart cannot mend).
  router.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  router.get('/version', (_req, res) => void res.json(serviceVersion()));
  const readiness = sharedReadiness(store);
  // Under `serve --workers`, which worker answered: each one is ready or not on its own.
  const worker = cluster.isWorker && cluster.worker ? { worker: cluster.worker.id } : {};
  router.get('/readyz', async (_req, res) => {
    // Shutting down: a balancer takes the instance out while it finishes what it holds.
    if (lifecycle.draining) return void res.status(503).json({ status: 'not ready', reason: 'draining', ...worker });
    // Replicas only take reads off the primary: one that does not serve is reported, not a reason to stop.
    const replicas = store.replicas ? { replicas: store.replicas.status() } : {};
    if (await readiness()) res.json({ status: 'ready', ...replicas, ...worker });
    else res.status(503).json({ status: 'not ready', reason: 'database unreachable', ...replicas, ...worker });
  });
  return router;
}

/**
 * Whether the database answers, checked at most once per READINESS_REUSE_MS: calls meanwhile share
 * the check in flight or its result. The probe needs no key and no limit (a balancer refused by
 * one would take the instance out), so it must cost nothing per call. A probe answers quickly: an
 * unreachable database is "not ready" after a short wait, without waiting for the query timeout.
 */
function sharedReadiness(store: Store): () => Promise<boolean> {
  let last: { startedMs: number; settled: boolean; ready: Promise<boolean> } | undefined;
  const check = async () => {
    try {
      await Promise.race([store.ping(), setTimeout(READINESS_TIMEOUT_MS).then(() => Promise.reject(new Error('timeout')))]);
      return true;
    } catch {
      return false;
    }
  };
  return () => {
    const now = performance.now();
    if (!last || (last.settled && now - last.startedMs >= READINESS_REUSE_MS)) {
      const current = { startedMs: now, settled: false, ready: check() };
      void current.ready.then(() => (current.settled = true));
      last = current;
    }
    return last.ready;
  };
}

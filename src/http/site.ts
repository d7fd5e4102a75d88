import express, { Router } from 'express';
import { readFileSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';
// Only the folder's path: the package's index loads the whole browser bundle into the server (~18 MB).
import getSwaggerUiPath from 'swagger-ui-dist/absolute-path.js';
import { specText, specYamlPath } from '../contract/spec.ts';
import type { Db } from '../store/db.ts';

const READINESS_TIMEOUT_MS = 1500;

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>event-feed API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });`;

/** The contract, its reference page (bundled from node_modules, no CDN), and health probes. */
export function siteRouter(db: Db): Router {
  const router = Router();
  const yaml = readFileSync(specYamlPath, 'utf8');

  router.get('/openapi.json', (_req, res) => void res.type('application/json').send(specText));
  router.get('/openapi.yaml', (_req, res) => void res.type('application/yaml').send(yaml));
  router.get('/docs', (_req, res) => void res.type('html').send(DOCS_PAGE));
  router.get('/docs/init.js', (_req, res) => void res.type('application/javascript').send(DOCS_INIT));
  router.use('/docs/assets', express.static(getSwaggerUiPath(), { index: false }));

  router.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  router.get('/readyz', async (_req, res) => {
    try {
      // A probe answers quickly: an unreachable database is "not ready" after a short wait,
      // without waiting for the query timeout.
      await Promise.race([db.raw('select 1'), setTimeout(READINESS_TIMEOUT_MS).then(() => Promise.reject(new Error('timeout')))]);
      res.json({ status: 'ready' });
    } catch {
      res.status(503).json({ status: 'not ready', reason: 'database unreachable' });
    }
  });
  return router;
}

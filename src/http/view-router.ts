import { Router, type Response } from 'express';
import { packageFile } from '../paths.ts';

// The view's files are served from the sources, also when the service runs from dist/.
const VIEW_DIR = packageFile('src/http/view');

/** The three files of the French web view, each at a fixed path with its content type. */
const ASSETS: ReadonlyArray<{ path: string; file: string; type: string }> = [
  { path: '/', file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: '/view.js', file: 'view.js', type: 'text/javascript; charset=utf-8' },
  { path: '/view.css', file: 'view.css', type: 'text/css; charset=utf-8' },
];

function sendAsset(res: Response, file: string, type: string): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-cache');
  res.sendFile(file, { root: VIEW_DIR, cacheControl: false, dotfiles: 'deny' });
}

/**
 * « Flux des événements »: a static page at `/` that reads the feed through `POST /v1/event_feed`
 * like any API client (the key stays in the browser's sessionStorage; the server sees only requests).
 */
export function viewRouter(): Router {
  const router = Router();
  for (const { path, file, type } of ASSETS) {
    router.get(path, (_req, res) => sendAsset(res, file, type));
  }
  return router;
}

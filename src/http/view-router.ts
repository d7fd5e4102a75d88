import { Router, type Response } from 'express';
import { packageFile } from '../paths.ts';

// The view's files are served from the sources, also when the service runs from dist/.
const VIEW_DIR = packageFile('src/http/view');
const GENERATED_DIR = packageFile('generated');

/**
 * The files of the French web view, each at a fixed path with its content type; the event types'
 * labels come from the contract's list of types (generated/event-labels.js, schemas/event-types.json).
 */
const ASSETS: ReadonlyArray<{ path: string; dir: string; file: string; type: string }> = [
  { path: '/', dir: VIEW_DIR, file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: '/view.js', dir: VIEW_DIR, file: 'view.js', type: 'text/javascript; charset=utf-8' },
  { path: '/view.css', dir: VIEW_DIR, file: 'view.css', type: 'text/css; charset=utf-8' },
  { path: '/event-labels.js', dir: GENERATED_DIR, file: 'event-labels.js', type: 'text/javascript; charset=utf-8' },
];

function sendAsset(res: Response, dir: string, file: string, type: string): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-cache');
  res.sendFile(file, { root: dir, cacheControl: false, dotfiles: 'deny' });
}

/**
 * « Flux des événements »: a static page at `/` that reads the API like any client (feed_cursor,
 * list_events, event_feed held with Prefer: wait); the key stays in the browser's sessionStorage,
 * the server sees only requests.
 */
export function viewRouter(): Router {
  const router = Router();
  for (const { path, dir, file, type } of ASSETS) {
    router.get(path, (_req, res) => sendAsset(res, dir, file, type));
  }
  return router;
}

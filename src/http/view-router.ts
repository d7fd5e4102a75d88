import { Router, type Response } from 'express';
import { packageFile } from '../base/paths.ts';
import { viewScript } from './view-bundle.ts';

// The view's page and style are served from the sources, also when the service runs from dist/;
// its script is the bundle of its TypeScript (viewScript).
const VIEW_DIR = packageFile('src/http/view');
const GENERATED_DIR = packageFile('generated');

/**
 * The static files of the French web view, each at a fixed path with its content type; the event
 * types' labels come from the contract's list of types (generated/event-labels.js,
 * schemas/event-types.json), which the view's bundle imports from /event-labels.js.
 */
const ASSETS: ReadonlyArray<{ path: string; dir: string; file: string; type: string }> = [
  { path: '/', dir: VIEW_DIR, file: 'index.html', type: 'text/html; charset=utf-8' },
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
  // The sign-in form's target when its script did not load: its key field has no name, so nothing
  // of it is sent, and this answers back to the page without reading or echoing the body.
  router.post('/', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, '/');
  });
  // Like the files above: revalidated each time (no-cache), by its Last-Modified (express answers 304).
  router.get('/view.js', async (_req, res) => {
    const { text, modified } = await viewScript();
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Last-Modified', modified.toUTCString());
    res.send(text);
  });
  return router;
}

import type { Response } from 'express';
import { randomBytes } from 'node:crypto';

/*
 * The consent page, in French whatever the browser's language (the service's people read French).
 * Two steps: the person gives an API key with `read` (never shown again, never put in a URL),
 * then sees what the assistant will be able to read with it (the key's workspace and mailboxes)
 * and allows or refuses. No script; a style with a nonce; nothing may frame it.
 */

/** Who asks, and where the answer goes: what every step names. */
export interface ConsentView {
  clientName: string | undefined;
  /** The host that publishes the client's metadata document; undefined for a client registered here (its name unverified). */
  documentHost: string | undefined;
  /** Where the code goes: a host, or an application's scheme (the function redirectTarget). */
  redirectTarget: string;
  /** The redirect goes to this computer (localhost): the person is warned. */
  redirectLoopback: boolean;
  /** The pending request's handle: the form's hidden field. */
  handle: string;
}

/** What the key gives access to, once checked. */
export interface KeyAccess {
  keyId: string;
  workspaceId: string;
  workspaceName: string | undefined;
  /** null: every mailbox of the workspace. */
  mailboxes: readonly string[] | null;
}

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = `
body { font-family: system-ui, sans-serif; max-width: 36rem; margin: 2rem auto; padding: 0 1rem; color: #1c1c1c; line-height: 1.5; }
h1 { font-size: 1.4rem; }
.note { color: #555; font-size: .95rem; }
.warn { background: #fff4e5; border-left: 4px solid #e69500; padding: .5rem .75rem; }
.error { background: #fdecea; border-left: 4px solid #c62828; padding: .5rem .75rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input[type=password] { width: 100%; padding: .5rem; font-family: monospace; box-sizing: border-box; }
.actions { display: flex; gap: .75rem; margin-top: 1rem; }
button { padding: .5rem 1rem; font-size: 1rem; cursor: pointer; }
button.primary { background: #1a56db; color: #fff; border: 0; border-radius: 4px; }
code { background: #f2f2f2; padding: 0 .2rem; }
`;

function page(nonce: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="fr">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escape(title)} — event-feed</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
${body}
</body>
</html>`;
}

const appName = (view: ConsentView) => (view.clientName ? `« ${escape(view.clientName)} »` : 'une application sans nom');

function who(view: ConsentView): string {
  const origin = view.documentHost
    ? `<p class="note">Son identité est publiée par <strong>${escape(view.documentHost)}</strong>.</p>`
    : `<p class="note">Cette application s’est enregistrée elle-même auprès du service : son nom n’est pas vérifié.</p>`;
  const loopback = view.redirectLoopback
    ? `<p class="warn">Cette adresse est sur votre propre ordinateur : n’acceptez que si vous venez vous-même de lancer cette connexion depuis votre assistant.</p>`
    : '';
  return `${origin}
<p>Après votre réponse, vous serez renvoyé vers <strong>${escape(view.redirectTarget)}</strong>.</p>
${loopback}`;
}

/** Step 1: who asks, and the key to give (with `error` when the last one was refused). */
export function keyPage(nonce: string, view: ConsentView, error?: string): string {
  return page(
    nonce,
    'Autoriser un assistant',
    `<h1>Autoriser ${appName(view)} à lire vos événements de messagerie</h1>
<p>${appName(view)} demande à lire le flux des événements de messagerie d’un espace d’event-feed.</p>
${who(view)}
${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/authorize/consent">
<input type="hidden" name="request" value="${escape(view.handle)}">
<label for="api_key">Clé d’API de l’espace (avec le droit <code>read</code>)</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" spellcheck="false" required>
<p class="note">La clé reste ici : l’application ne la reçoit pas. Elle reçoit un jeton d’accès en lecture seule, qui cesse de fonctionner dès que la clé est révoquée.</p>
<div class="actions">
<button type="submit" class="primary" name="action" value="check">Vérifier la clé</button>
<button type="submit" name="action" value="deny" formnovalidate>Refuser</button>
</div>
</form>`,
  );
}

/** Step 2: what the checked key gives access to, then allow or refuse. */
export function confirmPage(nonce: string, view: ConsentView, access: KeyAccess): string {
  const workspace = access.workspaceName
    ? `l’espace « ${escape(access.workspaceName)} » (<code>${escape(access.workspaceId)}</code>)`
    : `l’espace <code>${escape(access.workspaceId)}</code>`;
  const mailboxes =
    access.mailboxes === null
      ? 'les événements de <strong>toutes les boîtes aux lettres</strong> de cet espace'
      : `les événements de ces boîtes aux lettres seulement : ${access.mailboxes.map((mailbox) => `<code>${escape(mailbox)}</code>`).join(', ')}`;
  return page(
    nonce,
    'Confirmer l’accès',
    `<h1>Confirmer l’accès de ${appName(view)}</h1>
<p>Clé vérifiée (<code>${escape(access.keyId)}</code>). Avec votre accord, ${appName(view)} pourra lire :</p>
<ul>
<li>${workspace},</li>
<li>${mailboxes}.</li>
</ul>
<p>Elle ne pourra ni émettre d’événements, ni gérer les clés ou les webhooks.</p>
<p class="note">Son jeton d’accès vaut une heure et l’application le renouvelle elle-même ; après 30 jours sans renouvellement, il faudra l’autoriser à nouveau. Révoquer la clé coupe aussitôt tout accès.</p>
${who(view)}
<form method="post" action="/authorize/consent">
<input type="hidden" name="request" value="${escape(view.handle)}">
<div class="actions">
<button type="submit" class="primary" name="action" value="allow">Autoriser</button>
<button type="submit" name="action" value="deny">Refuser</button>
</div>
</form>`,
  );
}

/** A request that cannot go on (expired, unknown, from another browser…): nothing to do but start again from the assistant. */
export function errorPage(nonce: string, message: string, detail?: { code: string; description: string }): string {
  const technical = detail
    ? `\n<p class="note" id="oauth-error">Détail technique : <code>${escape(detail.code)}</code> : <span>${escape(detail.description)}</span></p>`
    : '';
  return page(
    nonce,
    'Autorisation impossible',
    `<h1>Autorisation impossible</h1>
<p class="error" role="alert">${escape(message)}</p>
<p>Relancez la connexion depuis votre assistant.</p>${technical}`,
  );
}

/** A nonce for the page's one style element. */
export const newNonce = () => randomBytes(16).toString('base64');

/**
 * Sends a consent page with what keeps it to this browser and this site: never cached or framed
 * (frame-ancestors 'none' and X-Frame-Options against clickjacking), no script, forms only to
 * this site and, since a form's redirect counts as its target, to where the code goes.
 */
export function sendPage(res: Response, status: number, html: string, nonce: string, formTargets: readonly string[] = []): void {
  res.status(status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  // Framing, the Referer and sniffing are refused for every answer (setSecurityHeaders); the policy is this page's own.
  res.setHeader(
    'Content-Security-Policy',
    [
      `default-src 'none'`,
      `style-src 'nonce-${nonce}'`,
      `form-action 'self' ${formTargets.join(' ')}`.trim(),
      `frame-ancestors 'none'`,
      `base-uri 'none'`,
    ].join('; '),
  );
  res.end(html);
}

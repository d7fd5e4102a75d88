import type { EmitEventRequest } from '../../generated/types.ts';

// A small deterministic generator (mulberry32): the same demo every time.
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MAILBOXES = [
  { id: 'mbx_contact', email: 'contact@atelier-lumiere.fr', name: 'Atelier Lumière' },
  { id: 'mbx_commandes', email: 'commandes@atelier-lumiere.fr', name: 'Service commandes' },
  { id: 'mbx_claire', email: 'claire.martin@atelier-lumiere.fr', name: 'Claire Martin' },
  { id: 'mbx_hugo', email: 'hugo.bernard@atelier-lumiere.fr', name: 'Hugo Bernard' },
  { id: 'mbx_newsletter', email: 'lettre@atelier-lumiere.fr', name: 'La lettre de l’Atelier' },
];
const PEOPLE = [
  ['Camille Dubois', 'camille.dubois@orange.fr'],
  ['Louis Petit', 'louis.petit@gmail.com'],
  ['Chloé Moreau', 'chloe.moreau@free.fr'],
  ['Nathan Laurent', 'n.laurent@laposte.net'],
  ['Léa Garnier', 'lea.garnier@outlook.fr'],
  ['Jules Roux', 'jules.roux@sfr.fr'],
  ['Manon Fontaine', 'manon@fontaine-deco.fr'],
  ['Gabriel Chevalier', 'g.chevalier@yahoo.fr'],
] as const;
const SUBJECTS = [
  'Votre commande n° 4821 est confirmée',
  'Devis pour la rénovation du salon',
  'Re: Disponibilité des luminaires en laiton',
  'Facture de novembre',
  'Rendez-vous à l’atelier jeudi ?',
  'La lettre de l’Atelier — nouveautés d’hiver',
  'Question sur la livraison',
  'Re: Re: Abat-jour sur mesure',
];
const MTAS = ['smtp-in.orange.fr', 'gmail-smtp-in.l.google.com', 'mx1.free.fr', 'mx.laposte.net', 'outlook-com.olc.protection.outlook.com'];

/** `count` events telling believable stories: mail in, mail out and what became of it (`seed`: another, as believable). */
export function demoTraffic(count: number, now: Date, seed = 42): EmitEventRequest[] {
  const rnd = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
  const start = now.getTime() - 7 * 24 * 3600 * 1000;
  const step = (now.getTime() - start) / count;
  const events: EmitEventRequest[] = [];
  let n = 0;
  const at = () => new Date(start + step * events.length + Math.floor(rnd() * step * 0.5)).toISOString();
  const refs = (mailbox: string) => ({
    mailbox_id: mailbox,
    message_id: `msg_${(++n).toString(36).padStart(6, '0')}`,
    thread_id: `thr_${Math.floor(n / 3).toString(36)}`,
  });

  while (events.length < count) {
    const mailbox = pick(MAILBOXES);
    const [name, email] = pick(PEOPLE);
    const person = { email, name };
    const subjectLine = pick(SUBJECTS);
    const internetId = `<${now.getFullYear()}${(events.length + 1000).toString(36)}.${Math.floor(rnd() * 1e6)}@atelier-lumiere.fr>`;
    const story = rnd();
    if (story < 0.4) {
      const r = refs(mailbox.id);
      events.push({
        type: 'mail.received',
        occurred_at: at(),
        subject: { person, refs: r },
        data: {
          internet_message_id: internetId,
          from: person,
          to: [{ email: mailbox.email, name: mailbox.name }],
          subject_line: subjectLine,
          size_bytes: 2000 + Math.floor(rnd() * 80000),
          attachment_count: rnd() < 0.3 ? 1 : 0,
          spam_score: Math.round(rnd() * 30) / 10,
          spam_verdict: 'pass',
        },
      });
      continue;
    }
    if (story < 0.47) {
      events.push({
        type: 'mail.rejected',
        occurred_at: at(),
        subject: { person: { email: 'promo@offres-incroyables.biz' }, refs: { mailbox_id: mailbox.id } },
        data: {
          stage: 'inbound',
          reason: 'spam',
          smtp_code: 550,
          diagnostic: '5.7.1 Message refusé : contenu identifié comme indésirable',
          recipient: mailbox.email,
        },
      });
      continue;
    }
    const r = refs(mailbox.id);
    const from = { email: mailbox.email, name: mailbox.name };
    events.push({
      type: 'mail.sent',
      occurred_at: at(),
      subject: { person, refs: r },
      data: {
        internet_message_id: internetId,
        from,
        to: [person],
        bcc_count: 0,
        subject_line: subjectLine,
        size_bytes: 3000 + Math.floor(rnd() * 40000),
      },
    });
    const mta = pick(MTAS);
    const outcome = rnd();
    if (outcome < 0.1) {
      events.push({
        type: 'mail.deferred',
        occurred_at: at(),
        subject: { person, refs: r },
        data: {
          internet_message_id: internetId,
          recipient: email,
          smtp_code: 451,
          enhanced_status: '4.7.1',
          diagnostic: '451 4.7.1 Greylisted, please try again later',
          attempt: 1,
          next_attempt_at: new Date(Date.parse(at()) + 600000).toISOString(),
        },
      });
    }
    if (outcome < 0.85) {
      events.push({
        type: 'mail.delivered',
        occurred_at: at(),
        subject: { person, refs: r },
        data: {
          internet_message_id: internetId,
          recipient: email,
          remote_mta: mta,
          smtp_response: '250 2.0.0 OK',
          delivery_ms: 200 + Math.floor(rnd() * 3000),
          attempt: outcome < 0.1 ? 2 : 1,
        },
      });
      if (mailbox.id === 'mbx_newsletter' && rnd() < 0.15) {
        events.push({
          type: 'mail.complained',
          occurred_at: at(),
          subject: { person, refs: r },
          data: { internet_message_id: internetId, recipient: email, feedback_type: 'abuse', feedback_provider: 'Yahoo' },
        });
      }
    } else {
      const hard = rnd() < 0.6;
      events.push({
        type: 'mail.bounced',
        occurred_at: at(),
        subject: { person, refs: r },
        data: hard
          ? {
              internet_message_id: internetId,
              recipient: email,
              bounce_type: 'hard',
              bounce_category: 'unknown_user',
              smtp_code: 550,
              enhanced_status: '5.1.1',
              diagnostic: '550 5.1.1 Adresse inconnue',
              remote_mta: mta,
            }
          : {
              internet_message_id: internetId,
              recipient: email,
              bounce_type: 'soft',
              bounce_category: 'mailbox_full',
              smtp_code: 452,
              enhanced_status: '4.2.2',
              diagnostic: '452 4.2.2 Boîte aux lettres pleine',
              remote_mta: mta,
            },
      });
    }
  }
  return events.slice(0, count);
}

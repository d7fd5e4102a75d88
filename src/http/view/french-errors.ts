// The service's errors in French: never its English message alone.
import { FeedError } from './feed-error.ts';
import { MSG } from './messages.ts';

/**
 * The service's English messages the view knows, in French. Unknown ones are shown after a French
 * sentence for their code, never alone.
 */
const KNOWN_MESSAGES: ReadonlyArray<readonly [RegExp, (m: RegExpExecArray) => string]> = [
  [/^missing or invalid API key/, () => MSG.unauthorized],
  [/^this key lacks the "read" permission/, () => MSG.noRead],
  [/^this key lacks the "([a-z]+)" permission/, (m) => `Cette clé n’a pas la permission « ${m[1]} ».`],
  [
    /^this key may not read events of mailbox "([^"]*)"/,
    (m) =>
      `Cette clé ne peut pas lire les événements de la boîte « ${m[1]} » : choisissez parmi les boîtes auxquelles elle est restreinte.`,
  ],
  [
    /^after has expired/,
    () => 'Le curseur a expiré : les événements qui le suivaient ont dépassé la durée de conservation et ont été supprimés.',
  ],
  [
    /^after is past the end of this feed/,
    () =>
      'Le curseur est au-delà de la fin du flux : la base a été restaurée, ou a basculé sur une copie qui n’avait pas reçu ces événements.',
  ],
  [/^after is not a valid cursor/, () => 'Curseur refusé : il est mal formé, altéré ou émis pour un autre espace.'],
  [/^page_token was issued for other filters/, () => 'Jeton de page émis pour d’autres filtres.'],
  [/^page_token is not valid/, () => 'Jeton de page refusé : il est mal formé ou altéré.'],
  [/^at .*(retention|expired)/, () => 'Cette date est antérieure à la durée de conservation des événements.'],
  [/^occurred_after must not be later than occurred_before/, () => 'La date de début doit précéder la date de fin.'],
  [/must be a valid date-time|is not a representable UTC date-time/, () => 'Date non valide.'],
  [
    /^mailbox_ids/,
    () => 'Filtre de boîtes refusé : identifiants mbx_ suivis de 1 à 64 lettres, chiffres, _ ou -, sans doublon, 100 au plus.',
  ],
  [/^types/, () => 'Filtre de types refusé.'],
  [/^request body is over/, () => 'Requête trop volumineuse.'],
  [/too many (held|waiting|pending)/, () => 'Trop de lectures en attente pour cette clé.'],
];

/** The French text for an error: never the service's English alone. */
export function frenchError(err: unknown): string {
  if (!(err instanceof FeedError)) return MSG.unavailable;
  const message = err.serverMessage;
  for (const [pattern, text] of KNOWN_MESSAGES) {
    const m = pattern.exec(message);
    if (m) return text(m);
  }
  let base: string;
  switch (err.kind) {
    case 'unauthorized':
      return MSG.unauthorized;
    case 'forbidden':
      base = MSG.forbidden;
      break;
    case 'rate_limited':
      return MSG.rateLimited(err.retryAfter);
    case 'invalid_argument':
    case 'not_found':
      base = MSG.badRequest;
      break;
    case 'network':
      return MSG.unavailable;
    default:
      base = err.status === 503 ? MSG.down : MSG.internal;
      if (err.requestId) base += ` Référence : ${err.requestId}.`;
      return base;
  }
  return message ? `${base} (Détail du service, en anglais : « ${message.slice(0, 300)} ».)` : base;
}

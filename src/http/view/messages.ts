// The view's own French sentences.
import { MAX_MAILBOXES } from './limits.ts';

export const MSG = {
  unauthorized: 'Clé invalide ou révoquée. Saisissez une autre clé.',
  noRead: 'Cette clé n’a pas la permission de lecture (read).',
  forbidden: 'Accès refusé pour cette clé.',
  rateLimited: (s: number) => `Trop de requêtes : nouvel essai dans ${s} s.`,
  badRequest: 'Requête refusée par le service.',
  internal: 'Erreur interne du service.',
  unavailable: 'Le service ne répond pas.',
  down: 'Le service est momentanément indisponible.',
  emptyKey: 'Saisissez une clé d’API.',
  badMailbox: (id: string) => `Identifiant de boîte non valide : « ${id} ». Attendu : mbx_ suivi de 1 à 64 lettres, chiffres, _ ou -.`,
  tooManyMailboxes: `Au plus ${MAX_MAILBOXES} boîtes par filtre.`,
  noHead:
    'Ce service ne fournit pas la position de la fin du flux (feed_cursor) et le flux est trop long pour la trouver autrement : le suivi en direct est indisponible.',
  anchorLost: 'Impossible de reprendre la lecture de l’historique à cet endroit : les événements les plus récents sont rechargés.',
  retry: 'Réessayer',
  reload: 'Recharger les plus récents',
} as const;

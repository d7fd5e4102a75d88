import type { FeedPosition } from '../../operations/feed-cursor.ts';

const dateFormat = new Intl.DateTimeFormat('fr-FR', { dateStyle: 'long', timeStyle: 'medium', timeZone: 'UTC' });

/** The French text an assistant shows a person for a position found by feed_cursor, and how to use it. */
export function summarizeFeedCursor(position: FeedPosition): string {
  const where =
    position.atMs === Infinity
      ? 'Position : la fin du flux. event_feed avec ce curseur renverra les événements émis à partir de maintenant.'
      : position.atHead
        ? `Aucun événement enregistré à partir du ${dateFormat.format(position.atMs)} (UTC) : position à la fin du flux. event_feed avec ce curseur renverra les événements émis ensuite.`
        : `Position : juste avant le premier événement enregistré à partir du ${dateFormat.format(position.atMs)} (UTC). event_feed avec ce curseur le renverra en premier.`;
  return `${where}\nCurseur à passer comme after à event_feed : ${position.body.cursor}`;
}

// « Flux des événements » : lit l'API comme n'importe quel client (POST /v1/feed_cursor,
// /v1/list_events, /v1/event_feed). La clé ne quitte jamais sessionStorage, le champ mot de passe
// et l'en-tête Authorization : elle n'est ni journalisée, ni affichée, ni mise dans une adresse.
//
// Ordre : le plus récent en haut.
// - À l'ouverture : le curseur de la tête du flux d'abord (feed_cursor « now »), puis la première
//   page de list_events (les plus récents, filtres appliqués par le service) : loadNewest.
// - « Charger plus ancien » : les pages suivantes de list_events (page_token) : loadOlder.
// - Suivi en direct : event_feed depuis ce curseur, en attente longue (Prefer: wait=N) ; les
//   nouveaux événements s'ajoutent en haut, dédoublonnés par id (ceux que list_events a déjà
//   donnés reviennent aussi par le flux), filtrés ici avec les mêmes règles que le service :
//   startTail, insertNewer.
// - Le nombre d'événements affichés est borné (MAX_ROWS) : le suivi retire les plus anciens (et
//   « Charger plus ancien » repart alors de là), remonter dans le temps retire les plus récents et
//   met le suivi en pause (« Revenir aux plus récents » recharge).
//
// This file is the bundle's entry (bundleView): it wires the controls and starts.
import { clearAlert } from './alerts.ts';
import { setUpDetail } from './detail.ts';
import { ui } from './dom.ts';
import { buildTypeOptions, setUpFilters } from './filters.ts';
import { currentKey } from './key-storage.ts';
import { loadNewest } from './load-newest.ts';
import { loadOlder } from './load-older.ts';
import { connect, setUpSignIn } from './sign-in.ts';
import { showLogin } from './sign-out.ts';
import { stopTail } from './state.ts';
import { updateStatus } from './status.ts';

ui.live.addEventListener('change', () => {
  if (ui.live.checked) {
    clearAlert();
    void loadNewest({ freshCursor: true });
  } else {
    stopTail();
    updateStatus();
  }
});

ui.newest.addEventListener('click', () => {
  ui.live.checked = true;
  clearAlert();
  void loadNewest({ freshCursor: true });
  ui.feedTitle.focus();
});

ui.older.addEventListener('click', () => void loadOlder());

setUpFilters();
setUpDetail();
setUpSignIn();

buildTypeOptions();
if (currentKey()) connect();
else showLogin();

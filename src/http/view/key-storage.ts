// The API key: in this tab's sessionStorage and in memory only. It never leaves them but for the
// password field and the Authorization header: it is not logged, shown, or put in an address.

const KEY_STORAGE = 'event-feed.key';

function readKey(): string {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

let memoryKey = readKey();

/** The key requests are sent with ('' when signed out). */
export const currentKey = () => memoryKey;

export function saveKey(key: string): void {
  try {
    sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    /* stockage indisponible : la clé ne vivra que le temps de la page */
  }
  memoryKey = key;
}

export function clearKey(): void {
  try {
    sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    /* rien à effacer */
  }
  memoryKey = '';
}

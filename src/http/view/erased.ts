// How the view shows a value erase_person erased: « effacé », in place of the contract's
// redaction (PERSONAL_REDACTION: the address erased@erased.invalid, a name or text `[erased]`,
// a text that kept its SMTP reply code "550 5.1.1 [erased]").
export const ERASED_ADDRESS = 'erased@erased.invalid';
export const ERASED_TEXT = '[erased]';
export const ERASED_FR = '« effacé »';

/** The value as the list shows it: « effacé » where it was erased, unchanged otherwise. */
export function shown(value: string): string {
  if (value === ERASED_ADDRESS || value === ERASED_TEXT) return ERASED_FR;
  return value.endsWith(` ${ERASED_TEXT}`) ? `${value.slice(0, -ERASED_TEXT.length)}${ERASED_FR}` : value;
}

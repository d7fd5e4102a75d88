/** `scheme://host[:port]` of an http(s) origin as browsers send it; undefined for anything else (`null`, paths, other schemes). */
export function normalizedOrigin(text: string): string | undefined {
  if (text.length > 512) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin === 'null') return undefined;
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) return undefined;
  return url.origin;
}

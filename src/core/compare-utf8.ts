/**
 * String order by UTF-8 bytes, the order SQLite's BINARY collation and Postgres's "C" collation
 * give, and so the order every store lists keys and scopes in.
 * @module
 */

/**
 * Orders strings by their UTF-8 bytes without encoding them. That is code point order: UTF-16
 * unit order except that a surrogate (half of a code point above U+FFFF) sorts after every
 * other unit.
 */
export function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    if (xSurrogate !== ySurrogate) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

// Standard padded base64, strictly: "All binary fields are standard padded base64."
// Node's Buffer decoder is lenient (it accepts '-', '_', missing padding and whitespace),
// so every decode is checked character by character and re-encoded to prove it is canonical.
import { WireFormatError } from './errors.mjs';

const ALPHABET = /^[A-Za-z0-9+/]$/;

export function b64encode(bytes) {
  return Buffer.from(bytes).toString('base64');
}

export function b64decode(text, field = 'base64') {
  if (typeof text !== 'string') {
    throw new WireFormatError(`expected base64 text, got ${typeof text}`, { field, offset: 0 });
  }
  const firstPad = text.indexOf('=');
  const body = firstPad === -1 ? text : text.slice(0, firstPad);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '-' || ch === '_') {
      throw new WireFormatError(`url-safe base64 character '${ch}'`, { field, offset: i });
    }
    if (!ALPHABET.test(ch)) {
      throw new WireFormatError(`character ${JSON.stringify(ch)} is not standard base64`, { field, offset: i });
    }
  }
  if (firstPad !== -1) {
    const pad = text.slice(firstPad);
    if (!(pad === '=' || pad === '==')) {
      throw new WireFormatError('padding is not at the end of the text', { field, offset: firstPad });
    }
  }
  if (text.length % 4 !== 0) {
    throw new WireFormatError(`${text.length} characters is not padded to a multiple of 4`, { field, offset: text.length });
  }
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  if (b64encode(bytes) !== text) {
    throw new WireFormatError('base64 is not canonical', { field, offset: Math.max(0, text.length - 3) });
  }
  return bytes;
}

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

export const utf8 = {
  encode: (s) => new TextEncoder().encode(s),
  decode: (b) => new TextDecoder('utf-8', { fatal: true }).decode(b),
};

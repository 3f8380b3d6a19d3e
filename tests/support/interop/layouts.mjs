// The three byte layouts, written from the spec's own words:
//   VAULT SealedBlob: [0x01 version][0x01 mode][12-byte random nonce][AES-256-GCM ciphertext][16-byte tag]
//   agent envelope:   [2-byte BE key length][RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]
//   owner_wrap:       [0x01][0x02] followed by the same envelope
import { WireFormatError } from './errors.mjs';
import { concat } from './b64.mjs';

export const NONCE = 12;
export const TAG = 16;

function need(data, offset, length, field, kind) {
  if (offset + length > data.length) {
    throw new WireFormatError(`${field} needs ${length} bytes at offset ${offset}, ${Math.max(0, data.length - offset)} remain`,
      { field, offset, kind });
  }
  return data.subarray(offset, offset + length);
}

function field(name, offset, value) {
  return { name, offset, length: value.length, value };
}

export function parseVault(data) {
  const kind = 'vault';
  const version = need(data, 0, 1, 'version', kind);
  if (version[0] !== 0x01) throw new WireFormatError(`version ${version[0]} is not 1`, { field: 'version', offset: 0, kind });
  const mode = need(data, 1, 1, 'mode', kind);
  if (mode[0] !== 0x01) throw new WireFormatError(`mode ${mode[0]} is not 1 (VAULT)`, { field: 'mode', offset: 1, kind });
  const nonce = need(data, 2, NONCE, 'nonce', kind);
  const ctLen = data.length - 2 - NONCE - TAG;
  if (ctLen < 0) throw new WireFormatError('no room for the 16-byte tag', { field: 'tag', offset: 2 + NONCE, kind });
  const ciphertext = data.subarray(2 + NONCE, 2 + NONCE + ctLen);
  const tag = data.subarray(2 + NONCE + ctLen);
  return { kind, fields: [field('version', 0, version), field('mode', 1, mode), field('nonce', 2, nonce),
    field('ciphertext', 2 + NONCE, ciphertext), field('tag', 2 + NONCE + ctLen, tag)] };
}

export function parseEnvelope(data, base = 0, kind = 'agent_envelope') {
  const at = (n) => base + n;
  const lenBytes = need(data, at(0), 2, 'key_length', kind);
  const keyLength = (lenBytes[0] << 8) | lenBytes[1];
  if (keyLength === 0) throw new WireFormatError('key length 0', { field: 'key_length', offset: at(0), kind });
  // The wrapped key, the IV and the tag must all fit: a length that leaves no room overruns.
  if (at(2) + keyLength + NONCE + TAG > data.length) {
    throw new WireFormatError(`key length ${keyLength} overruns the ${data.length}-byte envelope`,
      { field: 'wrapped_key', offset: at(2), kind });
  }
  const wrapped = data.subarray(at(2), at(2) + keyLength);
  const ivAt = at(2) + keyLength;
  const iv = data.subarray(ivAt, ivAt + NONCE);
  const ctAt = ivAt + NONCE;
  const ctLen = data.length - ctAt - TAG;
  const ciphertext = data.subarray(ctAt, ctAt + ctLen);
  const tag = data.subarray(ctAt + ctLen);
  return { kind, keyLength, fields: [field('key_length', at(0), lenBytes), field('wrapped_key', at(2), wrapped),
    field('iv', ivAt, iv), field('ciphertext', ctAt, ciphertext), field('tag', ctAt + ctLen, tag)] };
}

export function parseOwnerEnvelope(data) {
  const kind = 'owner_envelope';
  const version = need(data, 0, 1, 'version', kind);
  if (version[0] !== 0x01) throw new WireFormatError(`version ${version[0]} is not 1`, { field: 'version', offset: 0, kind });
  const mode = need(data, 1, 1, 'mode', kind);
  if (mode[0] !== 0x02) throw new WireFormatError(`mode ${mode[0]} is not 2 (ENVELOPE)`, { field: 'mode', offset: 1, kind });
  const env = parseEnvelope(data, 2, kind);
  return { kind, keyLength: env.keyLength, fields: [field('version', 0, version), field('mode', 1, mode), ...env.fields] };
}

export function parseAny(data, kind = null) {
  if (kind === null) {
    kind = data[0] === 0x01 && data[1] === 0x01 ? 'vault' : data[0] === 0x01 && data[1] === 0x02 ? 'owner_envelope' : 'agent_envelope';
  }
  if (kind === 'vault') return parseVault(data);
  if (kind === 'owner_envelope') return parseOwnerEnvelope(data);
  if (kind === 'agent_envelope') return parseEnvelope(data);
  throw new WireFormatError(`unknown layout ${kind}`, { kind });
}

export function get(parsed, name) {
  return parsed.fields.find((f) => f.name === name).value;
}

export function buildVault(nonce, ctAndTag) {
  return concat(Uint8Array.of(0x01, 0x01), nonce, ctAndTag);
}

export function buildEnvelope(wrapped, iv, ctAndTag, owner) {
  const len = Uint8Array.of(wrapped.length >> 8, wrapped.length & 0xff);
  const body = concat(len, wrapped, iv, ctAndTag);
  return owner ? concat(Uint8Array.of(0x01, 0x02), body) : body;
}

// VAULT SealedBlob: AES-256-GCM under a 32-byte key, no AAD, framed
// [0x01 version][0x01 mode][12-byte random nonce][ciphertext][16-byte tag].
import { subtle, randomBytes } from './keys.mjs';
import { CryptoError } from './errors.mjs';
import { NONCE, TAG, buildVault, parseVault, get } from './layouts.mjs';
import { concat } from './b64.mjs';

export async function aesKey(raw, usage) {
  if (raw.length !== 32) throw new CryptoError(`AES-256 needs 32 key bytes, got ${raw.length}`, { step: 'key check' });
  return subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, [usage]);
}

export async function gcmSeal(raw, nonce, plaintext) {
  const key = await aesKey(raw, 'encrypt');
  return new Uint8Array(await subtle.encrypt({ name: 'AES-GCM', iv: nonce, tagLength: 128 }, key, plaintext));
}

export async function gcmOpen(raw, nonce, ciphertext, tag, step = 'AES-256-GCM open') {
  const key = await aesKey(raw, 'decrypt');
  try {
    return new Uint8Array(await subtle.decrypt({ name: 'AES-GCM', iv: nonce, tagLength: 128 }, key, concat(ciphertext, tag)));
  } catch {
    throw new CryptoError('GCM tag mismatch: altered data or wrong key', { step });
  }
}

export async function sealVault(rawKey, plaintext, nonce = randomBytes(NONCE)) {
  return buildVault(nonce, await gcmSeal(rawKey, nonce, plaintext));
}

export async function openVault(rawKey, blob) {
  const p = parseVault(blob);
  return gcmOpen(rawKey, get(p, 'nonce'), get(p, 'ciphertext'), get(p, 'tag'));
}

export { TAG };

// Key envelopes, from the spec:
//  self_wrap / grantee wraps: "headerless envelope to that connection's public key: [2-byte BE key
//    length][RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag],
//    whose plaintext is the raw 32-byte memory key."
//  owner_wrap: "[0x01][0x02] followed by the same envelope to owner_public_key, whose plaintext is
//    the ASCII base64 text (44 characters) of the key, not the raw bytes."
//  RSA-OAEP with SHA-256 as the hash and MGF1 with SHA-256, empty label.
import { subtle, OAEP, randomBytes, importPublicKey, importPrivateKey, modulusBytes } from './keys.mjs';
import { gcmSeal, gcmOpen } from './vault.mjs';
import { NONCE, buildEnvelope, parseEnvelope, parseOwnerEnvelope, get } from './layouts.mjs';
import { b64encode, b64decode, utf8 } from './b64.mjs';
import { CryptoError, WireFormatError } from './errors.mjs';

async function asPublic(key) {
  return typeof key === 'string' ? importPublicKey(key) : key;
}

async function asPrivate(key) {
  return typeof key === 'string' ? importPrivateKey(key) : key;
}

/** Hybrid envelope: a fresh AES-256 content key, RSA-OAEP-SHA256 to the recipient; payload under AES-256-GCM. */
export async function sealEnvelope(payload, publicKey, { owner = false } = {}) {
  const pub = await asPublic(publicKey);
  const contentKey = randomBytes(32);
  const wrapped = new Uint8Array(await subtle.encrypt(OAEP, pub, contentKey));
  const iv = randomBytes(NONCE);
  return buildEnvelope(wrapped, iv, await gcmSeal(contentKey, iv, payload), owner);
}

export async function openEnvelope(envelope, privateKey, { owner = false } = {}) {
  const priv = await asPrivate(privateKey);
  const parsed = owner ? parseOwnerEnvelope(envelope) : parseEnvelope(envelope);
  if (parsed.keyLength !== modulusBytes(priv)) {
    throw new CryptoError(`wrapped key is ${parsed.keyLength} bytes; this RSA key expects ${modulusBytes(priv)}`,
      { step: 'RSA-OAEP-SHA256 unwrap' });
  }
  let contentKey;
  try {
    contentKey = new Uint8Array(await subtle.decrypt(OAEP, priv, get(parsed, 'wrapped_key')));
  } catch {
    throw new CryptoError('RSA-OAEP-SHA256 decryption failed', { step: 'RSA-OAEP-SHA256 unwrap' });
  }
  if (contentKey.length !== 32) {
    throw new CryptoError(`content key is ${contentKey.length} bytes, not 32`, { step: 'RSA-OAEP-SHA256 unwrap' });
  }
  return gcmOpen(contentKey, get(parsed, 'iv'), get(parsed, 'ciphertext'), get(parsed, 'tag'), 'AES-256-GCM open payload');
}

function checkKey(rawKey) {
  if (!(rawKey instanceof Uint8Array) || rawKey.length !== 32) {
    throw new CryptoError('a memory key is 32 bytes', { step: 'key check' });
  }
}

export async function wrapToAgent(rawKey, publicKey) {
  checkKey(rawKey);
  return sealEnvelope(rawKey, publicKey, { owner: false });
}

export async function unwrapAsAgent(envelope, privateKey) {
  const payload = await openEnvelope(envelope, privateKey, { owner: false });
  if (payload.length !== 32) {
    throw new CryptoError(`envelope holds ${payload.length} bytes, not a raw 32-byte key`, { step: 'memory key check' });
  }
  return payload;
}

export async function wrapToOwner(rawKey, publicKey) {
  checkKey(rawKey);
  return sealEnvelope(utf8.encode(b64encode(rawKey)), publicKey, { owner: true });
}

/** As the owner's app reads an owner_wrap: the plaintext must be the 44-character base64 text. */
export async function unwrapAsOwner(envelope, privateKey) {
  const payload = await openEnvelope(envelope, privateKey, { owner: true });
  const step = 'owner plaintext check';
  if (payload.length !== 44) {
    throw new CryptoError(`owner wrap holds ${payload.length} bytes, not 44 characters of base64 text`, { step });
  }
  let text;
  try {
    text = utf8.decode(payload);
    const key = b64decode(text, 'owner_wrap plaintext');
    if (key.length !== 32) throw new CryptoError(`base64 text decodes to ${key.length} bytes`, { step });
    return key;
  } catch (err) {
    if (err instanceof CryptoError) throw err;
    throw new CryptoError(`owner wrap plaintext is not base64 text of a key (${err.message})`, { step });
  }
}

export { WireFormatError };

// RSA keys on Node's WebCrypto. Public keys travel as base64 SPKI DER ("Public keys are RSA
// SPKI DER (base64)"); private keys as PEM, PKCS#8 or PKCS#1 (wrapped into PKCS#8 here,
// because WebCrypto imports only PKCS#8).
import { webcrypto } from 'node:crypto';
import { b64decode, b64encode, concat } from './b64.mjs';
import { WireFormatError } from './errors.mjs';

export const subtle = webcrypto.subtle;
export const OAEP = { name: 'RSA-OAEP', hash: 'SHA-256' }; // WebCrypto's RSA-OAEP uses MGF1 with the same hash

export function randomBytes(n) {
  return webcrypto.getRandomValues(new Uint8Array(n));
}

export async function sha256(bytes) {
  return new Uint8Array(await subtle.digest('SHA-256', bytes));
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/** kid = lowercase hex of the first 8 bytes of SHA-256(key). */
export async function kid(rawKey) {
  return hex((await sha256(rawKey)).subarray(0, 8));
}

export async function publicKeyFingerprint(spkiB64) {
  return hex(await sha256(b64decode(spkiB64, 'public_key'))).slice(0, 16);
}

export async function importPublicKey(spkiB64) {
  const der = b64decode(spkiB64, 'public_key');
  try {
    return await subtle.importKey('spki', der, OAEP, true, ['encrypt']);
  } catch (err) {
    throw new WireFormatError(`public key is not RSA SPKI DER: ${err.message}`, { field: 'public_key', offset: 0 });
  }
}

function derLength(n) {
  if (n < 0x80) return Uint8Array.of(n);
  const bytes = [];
  while (n > 0) { bytes.unshift(n & 0xff); n >>= 8; }
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

const der = (tag, body) => concat(Uint8Array.of(tag), derLength(body.length), body);

/** PKCS#1 RSAPrivateKey → PKCS#8 PrivateKeyInfo (version 0, rsaEncryption with NULL params). */
export function pkcs1ToPkcs8(pkcs1) {
  const rsaOid = Uint8Array.of(0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01);
  const algorithm = der(0x30, concat(rsaOid, Uint8Array.of(0x05, 0x00)));
  return der(0x30, concat(Uint8Array.of(0x02, 0x01, 0x00), algorithm, der(0x04, pkcs1)));
}

export function pemBody(pem) {
  const m = /-----BEGIN ([A-Z ]+)-----([\s\S]*?)-----END \1-----/.exec(pem);
  if (!m) throw new WireFormatError('no PEM block found', { field: 'private_key', offset: 0 });
  return { label: m[1], der: b64decode(m[2].replace(/\s+/g, ''), 'private_key') };
}

export async function importPrivateKey(pem) {
  const { label, der: body } = pemBody(pem);
  let pkcs8;
  if (label === 'PRIVATE KEY') pkcs8 = body;
  else if (label === 'RSA PRIVATE KEY') pkcs8 = pkcs1ToPkcs8(body);
  else throw new WireFormatError(`PEM label ${label} is not an RSA private key`, { field: 'private_key', offset: 0 });
  return subtle.importKey('pkcs8', pkcs8, OAEP, true, ['decrypt']);
}

function toPem(label, bytes) {
  const lines = b64encode(bytes).match(/.{1,64}/g).join('\n');
  return `-----BEGIN ${label}-----\n${lines}\n-----END ${label}-----\n`;
}

/** A fresh RSA-2048 key pair: { privateKeyPem (PKCS#8), publicKeyBase64 (SPKI DER) }. */
export async function generateKeyPair(bits = 2048) {
  const pair = await subtle.generateKey(
    { ...OAEP, modulusLength: bits, publicExponent: Uint8Array.of(1, 0, 1) }, true, ['encrypt', 'decrypt']);
  const pkcs8 = new Uint8Array(await subtle.exportKey('pkcs8', pair.privateKey));
  const spki = new Uint8Array(await subtle.exportKey('spki', pair.publicKey));
  return { privateKeyPem: toPem('PRIVATE KEY', pkcs8), publicKeyBase64: b64encode(spki) };
}

/** Modulus size in bytes of an imported RSA key (what a wrapped key's length must equal). */
export function modulusBytes(key) {
  return key.algorithm.modulusLength / 8;
}

"""The primitives: AES-256-GCM, RSA-OAEP-SHA256 and the agent's RSA key. No formats here
(wire.py has the layouts, sealing.py the recipes that join the two)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.wire.layouts import KEY_LEN, NONCE_LEN, b64decode, kid

OAEP = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def random_key() -> bytes:
    """A fresh random 32-byte AES-256 key (one per memory)."""
    return os.urandom(KEY_LEN)


def random_nonce() -> bytes:
    return os.urandom(NONCE_LEN)


def key_fingerprint(key: bytes) -> str:
    """What to show instead of a raw memory key: its kid."""
    return kid(key)


def aes_gcm_seal(key: bytes, nonce: bytes, plaintext: bytes) -> bytes:
    """AES-256-GCM with no AAD; returns ciphertext || 16-byte tag."""
    if len(key) != KEY_LEN:
        raise CryptoError(f"AES-256 needs a 32-byte key, got {len(key)} bytes", step="AES-256-GCM seal")
    return AESGCM(key).encrypt(nonce, plaintext, None)


def aes_gcm_open(key: bytes, nonce: bytes, ciphertext_and_tag: bytes) -> bytes:
    if len(key) != KEY_LEN:
        raise CryptoError(f"AES-256 needs a 32-byte key, got {len(key)} bytes", step="AES-256-GCM open")
    try:
        return AESGCM(key).decrypt(nonce, ciphertext_and_tag, None)
    except InvalidTag:
        raise CryptoError(
            "GCM tag mismatch: the ciphertext, nonce or tag was altered, or the key is wrong", step="AES-256-GCM open"
        ) from None


def load_public_key(b64_spki: str) -> rsa.RSAPublicKey:
    """An RSA public key from standard base64 SPKI DER (how Decoy sends every public key)."""
    der = b64decode(b64_spki, field="public_key")
    try:
        key = serialization.load_der_public_key(der)
    except ValueError as exc:
        raise WireFormatError(f"public key is not RSA SPKI DER: {exc}", field="public_key", offset=0) from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise WireFormatError("public key is not an RSA key", field="public_key", offset=0)
    return key


def public_key_fingerprint(b64_spki: str) -> str:
    """First 16 hex digits of SHA-256 over the SPKI DER: a short, safe name for a public key."""
    return hashlib.sha256(b64decode(b64_spki, field="public_key")).hexdigest()[:16]


def rsa_oaep_encrypt(public_key: rsa.RSAPublicKey | str, data: bytes) -> bytes:
    if isinstance(public_key, str):
        public_key = load_public_key(public_key)
    return public_key.encrypt(data, OAEP)


def rsa_oaep_decrypt(private_key: rsa.RSAPrivateKey, data: bytes) -> bytes:
    try:
        return private_key.decrypt(data, OAEP)
    except ValueError:
        raise CryptoError(
            "RSA-OAEP-SHA256 decryption failed: the key was wrapped to another public key, "
            "with other padding or hash, or the wrapped bytes were altered",
            step="RSA-OAEP-SHA256 unwrap",
        ) from None


class AgentKey:
    """An RSA key pair (the agent's, or the simulated owner phone's).

    The repr shows only a fingerprint; `to_pem()` is the one way to get the private key out.
    """

    __slots__ = ("_spki", "private_key", "public_key")

    def __init__(self, private_key: rsa.RSAPrivateKey):
        if not isinstance(private_key, rsa.RSAPrivateKey):
            raise TypeError("AgentKey needs an RSA private key")
        self.private_key = private_key
        self.public_key = private_key.public_key()
        self._spki = self.public_key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @classmethod
    def generate(cls, bits: int = 2048) -> AgentKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=bits))

    @classmethod
    def from_pem(cls, text: str | bytes) -> AgentKey:
        """PKCS#8 ("BEGIN PRIVATE KEY") or PKCS#1 ("BEGIN RSA PRIVATE KEY") PEM."""
        data = text.encode("ascii") if isinstance(text, str) else bytes(text)
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise WireFormatError(
                f"not an unencrypted RSA private key in PEM: {exc}", field="private_key", offset=0
            ) from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise WireFormatError("the PEM holds a key that is not RSA", field="private_key", offset=0)
        return cls(key)

    @classmethod
    def pem_file(cls, option: str, path: str | os.PathLike[str] | None) -> bytes | None:
        """The PEM text of the file a command's `option` named (None when none was), once it is
        known to hold a private key this class reads; else a ValueError naming the option and the
        file and saying why ("--agent-key k.pem: no such file", "…: not an … key …")."""
        if not path:
            return None
        try:
            data = Path(path).expanduser().read_bytes()
            cls.from_pem(data)  # a WireFormatError (a ValueError) says what the file holds instead
        except FileNotFoundError:
            raise ValueError(f"{option} {path}: no such file") from None
        except OSError as exc:
            raise ValueError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise ValueError(f"{option} {path}: {exc}") from None
        return data

    def to_pem(self) -> str:
        """PKCS#8 PEM. This is the secret: store it 0600, never print it."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")

    @property
    def public_key_b64(self) -> str:
        """SPKI DER, standard base64: what `agent_public_key` and memory-grantees carry."""
        return base64.b64encode(self._spki).decode("ascii")

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self._spki).hexdigest()[:16]

    @property
    def key_size(self) -> int:
        return self.private_key.key_size

    def decrypt(self, data: bytes) -> bytes:
        return rsa_oaep_decrypt(self.private_key, data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AgentKey) and other._spki == self._spki

    def __hash__(self) -> int:
        return hash(self._spki)

    def __repr__(self) -> str:
        return f"<AgentKey RSA-{self.key_size} fingerprint {self.fingerprint}>"

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:  # never let pickling or copying leak the key by accident
        raise TypeError("AgentKey is not picklable; use to_pem() deliberately")

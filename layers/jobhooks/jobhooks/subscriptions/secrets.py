"""Envelope encryption of subscription signing secrets.

Each subscription has one data key from KMS `GenerateDataKey` (AES_256, with the subscription id
as encryption context). The item keeps only the KMS-encrypted form of that key (`data_key`); each
signing secret is sealed with AES-256-GCM under it:

    ciphertext = version (1 byte) || nonce (12 random bytes) || AES-GCM(secret) || tag

The secrets themselves are Standard Webhooks secrets from `jobhooks.webhook_signature`.

The associated data names the subscription and the secret, so a ciphertext copied to another
subscription or another secret slot fails to open. Opening a data key calls KMS `Decrypt` once;
decrypted keys are then kept in a bounded in-memory cache keyed by the encrypted blob, because
the deliver function opens the same few keys for every delivery.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from jobhooks.subscriptions.exceptions import (
    KeyServiceError,
    KmsKeyNotConfiguredError,
    SecretDecryptionError,
)

_SEAL_VERSION: Final = b"\x01"
_NONCE_BYTES: Final = 12
_AAD_LABEL: Final = b"jobhooks.subscription-secret/1"
_CONTEXT_KEY: Final = "jobhooks:subscription_id"
DEFAULT_DATA_KEY_CACHE_SIZE: Final = 1024

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM


class DataKey:
    """A subscription's data key: the plaintext for AES-GCM and the KMS blob that is stored."""

    __slots__ = ("_plaintext", "encrypted")

    def __init__(self, plaintext: bytes, encrypted: bytes) -> None:
        self._plaintext = plaintext
        self.encrypted = encrypted

    def __repr__(self) -> str:
        return f"DataKey(encrypted=<{len(self.encrypted)} bytes>)"

    def _aead(self) -> AESGCM:
        # Imported when a secret is first sealed or opened, not with the store: most management
        # requests never touch a secret, and the API's cold start does not pay for it.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return AESGCM(self._plaintext)


def _associated_data(subscription_id: str, secret_id: str) -> bytes:
    return b"\x00".join((_AAD_LABEL, subscription_id.encode(), secret_id.encode()))


def seal_secret(data_key: DataKey, subscription_id: str, secret_id: str, secret: str) -> bytes:
    nonce = os.urandom(_NONCE_BYTES)
    sealed = data_key._aead().encrypt(
        nonce, secret.encode("utf-8"), _associated_data(subscription_id, secret_id)
    )
    return _SEAL_VERSION + nonce + sealed


def open_secret(data_key: DataKey, subscription_id: str, secret_id: str, ciphertext: bytes) -> str:
    """The plaintext secret, or `SecretDecryptionError` when anything about it is not authentic."""
    if len(ciphertext) < 1 + _NONCE_BYTES + 16 or ciphertext[:1] != _SEAL_VERSION:
        raise SecretDecryptionError(subscription_id)
    nonce, sealed = ciphertext[1 : 1 + _NONCE_BYTES], ciphertext[1 + _NONCE_BYTES :]
    from cryptography.exceptions import InvalidTag

    try:
        plaintext = data_key._aead().decrypt(
            nonce, sealed, _associated_data(subscription_id, secret_id)
        )
    except InvalidTag:
        raise SecretDecryptionError(subscription_id) from None
    return plaintext.decode("utf-8")


class SecretVault:
    """Data keys from KMS, sealing and opening of signing secrets.

    `kms_key_id` is needed only to create data keys (create, rotate); opening needs only
    `kms:Decrypt`, which is all the deliver function is granted.
    """

    def __init__(
        self,
        kms_client: Any,
        kms_key_id: str | None = None,
        *,
        cache_size: int = DEFAULT_DATA_KEY_CACHE_SIZE,
    ) -> None:
        self._kms = kms_client
        self._kms_key_id = kms_key_id
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, bytes], DataKey] = OrderedDict()
        self._lock = threading.Lock()

    def new_data_key(self, subscription_id: str) -> DataKey:
        if not self._kms_key_id:
            raise KmsKeyNotConfiguredError()
        try:
            response = self._kms.generate_data_key(
                KeyId=self._kms_key_id,
                KeySpec="AES_256",
                EncryptionContext={_CONTEXT_KEY: subscription_id},
            )
        except ClientError as error:
            raise KeyServiceError("GenerateDataKey", _aws_code(error)) from None
        data_key = DataKey(bytes(response["Plaintext"]), bytes(response["CiphertextBlob"]))
        self._remember(subscription_id, data_key)
        return data_key

    def open_data_key(self, subscription_id: str, encrypted: bytes) -> DataKey:
        # The subscription id is part of the cache key: a blob moved onto another subscription
        # must go to KMS, whose encryption-context check then refuses it.
        cache_key = (subscription_id, encrypted)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self._cache.move_to_end(cache_key)
                return cached
        try:
            response = self._kms.decrypt(
                CiphertextBlob=encrypted, EncryptionContext={_CONTEXT_KEY: subscription_id}
            )
        except ClientError as error:
            code = _aws_code(error)
            if code in ("InvalidCiphertextException", "IncorrectKeyException"):
                raise SecretDecryptionError(subscription_id) from None
            raise KeyServiceError("Decrypt", code) from None
        data_key = DataKey(bytes(response["Plaintext"]), encrypted)
        self._remember(subscription_id, data_key)
        return data_key

    def seal(self, data_key: DataKey, subscription_id: str, secret_id: str, secret: str) -> bytes:
        return seal_secret(data_key, subscription_id, secret_id, secret)

    def open(
        self, subscription_id: str, encrypted_data_key: bytes, secret_id: str, ciphertext: bytes
    ) -> str:
        data_key = self.open_data_key(subscription_id, encrypted_data_key)
        return open_secret(data_key, subscription_id, secret_id, ciphertext)

    def _remember(self, subscription_id: str, data_key: DataKey) -> None:
        if self._cache_size <= 0:
            return
        with self._lock:
            self._cache[(subscription_id, data_key.encrypted)] = data_key
            self._cache.move_to_end((subscription_id, data_key.encrypted))
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


def _aws_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", "Unknown"))

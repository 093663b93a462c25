"""Envelope encryption of signing secrets, against an in-memory stand-in for KMS."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from botocore.exceptions import ClientError
from jobhooks.subscriptions.exceptions import (
    KeyServiceError,
    KmsKeyNotConfiguredError,
    SecretDecryptionError,
)
from jobhooks.subscriptions.secrets import (
    DataKey,
    SecretVault,
    open_secret,
    seal_secret,
)
from jobhooks.webhook_signature import generate_secret
from standardwebhooks.webhooks import Webhook


class InMemoryKms:
    """GenerateDataKey/Decrypt with KMS's encryption-context rule; counts its calls."""

    def __init__(self) -> None:
        self.keys: dict[bytes, tuple[bytes, dict[str, str]]] = {}
        self.decrypt_calls = 0
        self.fail_with: str | None = None

    def generate_data_key(
        self, *, KeyId: str, KeySpec: str, EncryptionContext: dict[str, str]
    ) -> dict[str, Any]:
        assert KeySpec == "AES_256"
        self._maybe_fail("GenerateDataKey")
        plaintext, blob = os.urandom(32), b"kms-blob:" + os.urandom(16)
        self.keys[blob] = (plaintext, dict(EncryptionContext))
        return {"Plaintext": plaintext, "CiphertextBlob": blob, "KeyId": KeyId}

    def decrypt(
        self, *, CiphertextBlob: bytes, EncryptionContext: dict[str, str]
    ) -> dict[str, Any]:
        self.decrypt_calls += 1
        self._maybe_fail("Decrypt")
        stored = self.keys.get(CiphertextBlob)
        if stored is None or stored[1] != EncryptionContext:
            raise _client_error("InvalidCiphertextException", "Decrypt")
        return {"Plaintext": stored[0]}

    def _maybe_fail(self, operation: str) -> None:
        if self.fail_with:
            raise _client_error(self.fail_with, operation)


def _client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": ""}}, operation)


@pytest.fixture
def kms() -> InMemoryKms:
    return InMemoryKms()


@pytest.fixture
def vault(kms: InMemoryKms) -> SecretVault:
    return SecretVault(kms, "alias/jobhooks")


def test_signing_secrets_are_standard_webhooks_shaped() -> None:
    secret = generate_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert generate_secret() != secret
    # The reference verifier accepts it as a key.
    Webhook(secret)


def test_sealed_secret_opens_with_the_same_subscription_and_secret_id(vault: SecretVault) -> None:
    data_key = vault.new_data_key("sub_a")
    secret = generate_secret()
    sealed = seal_secret(data_key, "sub_a", "sec_1", secret)
    assert secret.encode() not in sealed
    assert open_secret(data_key, "sub_a", "sec_1", sealed) == secret


def test_sealing_twice_uses_fresh_nonces(vault: SecretVault) -> None:
    data_key = vault.new_data_key("sub_a")
    assert seal_secret(data_key, "sub_a", "sec_1", "whsec_x") != seal_secret(
        data_key, "sub_a", "sec_1", "whsec_x"
    )


@pytest.mark.parametrize("position", [0, 1, 13, -1])
def test_rejects_tampered_ciphertext(vault: SecretVault, position: int) -> None:
    data_key = vault.new_data_key("sub_a")
    sealed = bytearray(seal_secret(data_key, "sub_a", "sec_1", generate_secret()))
    sealed[position] ^= 0x01
    with pytest.raises(SecretDecryptionError) as caught:
        open_secret(data_key, "sub_a", "sec_1", bytes(sealed))
    assert caught.value.code == "secret_unreadable"


def test_rejects_truncated_ciphertext(vault: SecretVault) -> None:
    data_key = vault.new_data_key("sub_a")
    sealed = seal_secret(data_key, "sub_a", "sec_1", generate_secret())
    with pytest.raises(SecretDecryptionError):
        open_secret(data_key, "sub_a", "sec_1", sealed[:20])


def test_rejects_ciphertext_moved_to_another_subscription_under_the_same_key(
    vault: SecretVault,
) -> None:
    data_key = vault.new_data_key("sub_a")
    sealed = seal_secret(data_key, "sub_a", "sec_1", generate_secret())
    with pytest.raises(SecretDecryptionError):
        open_secret(data_key, "sub_b", "sec_1", sealed)


def test_rejects_ciphertext_moved_to_another_secret_slot(vault: SecretVault) -> None:
    data_key = vault.new_data_key("sub_a")
    sealed = seal_secret(data_key, "sub_a", "sec_1", generate_secret())
    with pytest.raises(SecretDecryptionError):
        open_secret(data_key, "sub_a", "sec_2", sealed)


def test_rejects_data_key_moved_to_another_subscription(
    vault: SecretVault, kms: InMemoryKms
) -> None:
    data_key = vault.new_data_key("sub_a")
    vault = SecretVault(kms, "alias/jobhooks")  # a new process: nothing cached
    with pytest.raises(SecretDecryptionError):
        vault.open_data_key("sub_b", data_key.encrypted)


def test_a_cached_data_key_is_not_reused_for_another_subscription(
    vault: SecretVault, kms: InMemoryKms
) -> None:
    data_key = vault.new_data_key("sub_a")
    vault.open_data_key("sub_a", data_key.encrypted)
    with pytest.raises(SecretDecryptionError):
        vault.open_data_key("sub_b", data_key.encrypted)


def test_opened_data_keys_are_cached(vault: SecretVault, kms: InMemoryKms) -> None:
    encrypted = vault.new_data_key("sub_a").encrypted
    vault = SecretVault(kms, "alias/jobhooks")  # a new process: nothing cached
    sealed = vault.seal(vault.open_data_key("sub_a", encrypted), "sub_a", "sec_1", "whsec_AAAA")
    for _ in range(5):
        assert vault.open("sub_a", encrypted, "sec_1", sealed) == "whsec_AAAA"
    assert kms.decrypt_calls == 1


def test_data_key_cache_is_bounded(kms: InMemoryKms) -> None:
    vault = SecretVault(kms, "alias/jobhooks", cache_size=2)
    blobs = [vault.new_data_key(f"sub_{n}").encrypted for n in range(3)]
    kms.decrypt_calls = 0
    vault.open_data_key("sub_2", blobs[2])
    vault.open_data_key("sub_1", blobs[1])
    assert kms.decrypt_calls == 0
    vault.open_data_key("sub_0", blobs[0])  # evicted as the least recently used
    assert kms.decrypt_calls == 1


def test_data_key_repr_hides_the_plaintext_key(vault: SecretVault) -> None:
    data_key = vault.new_data_key("sub_a")
    plaintext = data_key._plaintext
    assert plaintext.hex() not in repr(data_key)
    assert repr(plaintext) not in repr(data_key)
    assert isinstance(data_key, DataKey)


def test_creating_a_data_key_needs_a_configured_kms_key(kms: InMemoryKms) -> None:
    with pytest.raises(KmsKeyNotConfiguredError) as caught:
        SecretVault(kms, None).new_data_key("sub_a")
    assert caught.value.code == "kms_key_not_configured"
    assert "JOBHOOKS_KMS_KEY_ID" in caught.value.message


def test_kms_refusals_surface_with_their_aws_code(vault: SecretVault, kms: InMemoryKms) -> None:
    encrypted = vault.new_data_key("sub_a").encrypted
    vault = SecretVault(kms, "alias/jobhooks")  # a new process: nothing cached
    kms.fail_with = "AccessDeniedException"
    with pytest.raises(KeyServiceError) as caught:
        vault.open_data_key("sub_a", encrypted)
    assert caught.value.code == "kms_error"
    assert caught.value.aws_code == "AccessDeniedException"
    with pytest.raises(KeyServiceError):
        vault.new_data_key("sub_b")

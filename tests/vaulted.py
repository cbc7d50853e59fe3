"""A vault-encrypted variable's value, as inventory and vars files give it, on every ansible-core line."""

from __future__ import annotations

from ansible.parsing.vault import VaultLib, VaultSecret


def vaulted(text: str, ciphertext: str | None = None):
    """``text`` as a vault-encrypted variable's value, as inventory and vars files give it (``ciphertext``: that
    envelope instead, e.g. a malformed one)."""
    vault = VaultLib([("default", VaultSecret(b"pass"))])
    envelope = ciphertext.encode() if ciphertext is not None else vault.encrypt(text)
    try:
        from ansible.parsing.vault import EncryptedString
    except ImportError:  # ansible-core < 2.19
        from ansible.parsing.yaml.objects import AnsibleVaultEncryptedUnicode
        secret = AnsibleVaultEncryptedUnicode(envelope)
        secret.vault = vault
        return secret
    from ansible.parsing.vault import VaultSecretsContext
    if VaultSecretsContext.current(optional=True) is None:  # the process-wide secrets, as the CLI sets them
        VaultSecretsContext.initialize(VaultSecretsContext(secrets=[("default", VaultSecret(b"pass"))]))
    return EncryptedString(ciphertext=envelope.decode())

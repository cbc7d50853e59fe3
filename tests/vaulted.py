"""A vault-encrypted variable's value, as inventory and vars files give it, on every ansible-core line."""

from __future__ import annotations

from ansible.parsing.vault import VaultLib, VaultSecret


def vaulted(text: str):
    """``text`` as a vault-encrypted variable's value, as inventory and vars files give it."""
    vault = VaultLib([("default", VaultSecret(b"pass"))])
    try:
        from ansible.parsing.vault import EncryptedString
    except ImportError:  # ansible-core < 2.19
        from ansible.parsing.yaml.objects import AnsibleVaultEncryptedUnicode
        secret = AnsibleVaultEncryptedUnicode(vault.encrypt(text))
        secret.vault = vault
        return secret
    from ansible.parsing.vault import VaultSecretsContext
    if VaultSecretsContext.current(optional=True) is None:  # the process-wide secrets, as the CLI sets them
        VaultSecretsContext.initialize(VaultSecretsContext(secrets=[("default", VaultSecret(b"pass"))]))
    return EncryptedString(ciphertext=vault.encrypt(text).decode())

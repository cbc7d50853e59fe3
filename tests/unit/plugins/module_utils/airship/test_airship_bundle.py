# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The bundle source: airshipctl's KubeConfig document, found among a bundle's documents, decrypted with sops only
when it is encrypted (alone, or with its file when sops encrypted the file as one), and read only when needed."""

from __future__ import annotations

import base64
import glob
import os
import shutil
import subprocess
import textwrap

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.airship.bundle import read_bundle_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

TOKEN = "tok-s3cr3t-bundle-value"
FIXTURE_PHASES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures",
                                               "airshipctl", "site", "phases"))
CLUSTER_MAP = "apiVersion: airshipit.org/v1alpha1\nkind: ClusterMap\nmetadata: {name: main-map}\nmap: {}\n"
SOPS_METADATA = {"age": [{"recipient": "age1x", "enc": "ciphertext"}], "mac": "ENC[AES256_GCM,data:x]",
                 "version": "3.9.0"}


def kubeconfig_document(name="default", cluster="target-cluster", config=None, **fields):
    config = config if config is not None else {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": f"https://{cluster}.test:6443"}}],
        "users": [{"name": f"{cluster}-admin", "user": {"token": TOKEN}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": f"{cluster}-admin"}}],
    }
    document = {"apiVersion": "airshipit.org/v1alpha1", "kind": "KubeConfig", "metadata": {"name": name},
                "config": config}
    document.update(fields)
    return document


def write_documents(path, *documents):
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return str(path)


def resolve(written, context=None, environ=None):
    return resolve_kubeconfig(normalize_sources(written, "test"), context, hooks=SourceHooks(environ or {}))


def test_fixture_kubeconfig_document_resolves():
    resolution = resolve({"bundle": FIXTURE_PHASES}, "target-cluster")
    assert (resolution.context, resolution.server) == ("target-cluster", "https://10.23.25.102:6443")
    assert resolution.provenance["sources"] == [
        {"index": 1, "kind": "bundle", "location": FIXTURE_PHASES, "status": "read"}]


def test_plain_document_among_others_and_paths_relative_to_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ca.crt").write_bytes(b"CA OF THE SITE")
    config = kubeconfig_document()["config"]
    config["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    write_documents(tmp_path / "site" / "documents.yaml", yaml.safe_load(CLUSTER_MAP),
                    kubeconfig_document(config=config))
    resolution = resolve({"bundle": str(tmp_path / "site")}, "target-cluster")
    cluster = resolution.config["clusters"][0]["cluster"]
    assert cluster["certificate-authority-data"] == base64.b64encode(b"CA OF THE SITE").decode()
    assert resolution.config["users"][0]["user"]["token"] == TOKEN


def test_picked_by_name_among_several(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    write_documents(bundle / "a.yaml", kubeconfig_document("ephemeral", cluster="ephemeral-cluster"))
    write_documents(bundle / "b.yaml", yaml.safe_load(CLUSTER_MAP), kubeconfig_document("target"))
    resolution = resolve({"bundle": str(bundle), "name": "target"}, "target-cluster")
    assert resolution.server == "https://target-cluster.test:6443"
    assert resolution.provenance["context"] == {"index": 1, "kind": "bundle",
                                                "location": f"{bundle}, KubeConfig target"}


@pytest.mark.parametrize("documents, name, message", [
    ([yaml.safe_load(CLUSTER_MAP)], None,
     "no KubeConfig document (airshipit.org/v1alpha1) in 1 file(s)"),
    ([kubeconfig_document("a"), kubeconfig_document("b")], "c",
     "no KubeConfig document (airshipit.org/v1alpha1) named 'c' in 1 file(s); KubeConfig documents found: a, b"),
    ([kubeconfig_document("a"), kubeconfig_document("b")], None,
     "2 KubeConfig documents (airshipit.org/v1alpha1): {file} document 1 (KubeConfig a); {file} document 2 "
     "(KubeConfig b); set the source's name to the metadata.name of the one to use"),
    ([kubeconfig_document("a"), kubeconfig_document("a")], "a",
     "2 KubeConfig documents (airshipit.org/v1alpha1) named 'a': "),
    ([{"apiVersion": "ENC[AES256_GCM,data:x]", "kind": "ENC[AES256_GCM,data:y]", "sops": SOPS_METADATA}], None,
     "SOPS-encrypted documents whose kind is encrypted too are not looked into ({file} document 1): encrypt them "
     "with --unencrypted-regex '^(kind|apiVersion|group|metadata)$'"),
    ([kubeconfig_document(config=None, extra=1) | {"config": None}], None,
     "{file} document 1 (KubeConfig default) field config: expected the kubeconfig (a mapping with clusters, users "
     "and contexts), got null"),
    ([kubeconfig_document(config=["x"])], None, "field config: expected the kubeconfig"),
    ([kubeconfig_document(config={"kind": "Secret"})], None,
     "{file} document 1 (KubeConfig default) field config: kind: 'Secret' is not a kubeconfig (expected Config)"),
    ([kubeconfig_document(config={"users": [{"name": "u", "user": {"token": 7}}]})], None,
     "(KubeConfig default) field config: users[0].user.token: expected a string, got a number"),
], ids=["none", "name-not-found", "ambiguous", "same-name-twice", "kind-encrypted", "config-missing",
        "config-not-a-mapping", "config-of-another-kind", "config-field-type"])
def test_document_errors_name_file_document_and_field(tmp_path, documents, name, message):
    file = write_documents(tmp_path / "site.yaml", *documents)
    written = {"bundle": file, **({"name": name} if name else {})}
    with pytest.raises(PhasekitError) as caught:
        resolve(written)
    location = f"{file}, KubeConfig {name}" if name else file
    assert str(caught.value).startswith(f"kubeconfig source 1 (bundle: {location}): ")
    assert message.format(file=file) in str(caught.value)
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("layout, message", [
    ({}, "no such file or directory"),
    ({"dir/": None}, "no *.yaml or *.yml files in the directory"),
    ({"dir/a.yaml": "kind: [\n"}, "{root}/dir/a.yaml document 1: invalid YAML at line 2, column 1"),
    ({"dir/a.yaml": "apiVersion: v1\n---\nkind: [\n"}, "{root}/dir/a.yaml document 2: invalid YAML"),
    ({"dir/a.yaml": CLUSTER_MAP}, "in 1 file(s); only the directory's own *.yaml and *.yml files are read "
                                  "(a kustomization is not built)"),
], ids=["no-such-path", "empty-directory", "invalid-yaml", "invalid-yaml-second-document", "not-in-the-directory"])
def test_bundle_errors(tmp_path, layout, message):
    for relative, text in layout.items():
        target = tmp_path / relative
        if text is None:
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    with pytest.raises(PhasekitError, match="^kubeconfig source 1 \\(bundle: ") as caught:
        resolve({"bundle": str(tmp_path / "dir")})
    assert message.format(root=tmp_path) in str(caught.value)


@pytest.mark.parametrize("written, message", [
    ({"bundle": ""}, "expected a file or directory of airshipctl documents"),
    ({"bundle": "site", "name": ""}, "name: expected the KubeConfig document's metadata.name"),
    ({"bundle": "site", "input_type": "yaml"}, "unknown option input_type; a bundle source accepts bundle, name"),
], ids=["empty-bundle", "empty-name", "option-of-another-kind"])
def test_bundle_source_spec_errors(written, message):
    with pytest.raises(PhasekitError, match="^test, source 1 \\(bundle\\)") as caught:
        normalize_sources(written, "test")
    assert message in str(caught.value)


def test_spec_is_written_back_with_its_name():
    spec = normalize_sources({"bundle": "~/site", "name": "default", "optional": True}, "test")[0]
    assert spec.to_dict() == {"bundle": "~/site", "name": "default", "optional": True}
    assert spec.label() == "kubeconfig source 1 (bundle: ~/site, KubeConfig default)"


def test_nothing_is_read_before_it_is_needed(tmp_path):
    """Checking sources reads nothing; a bundle after the source that completes the context is not opened."""
    never = tmp_path / "never"
    never.mkdir()
    write_documents(never / "x.yaml", {"apiVersion": "ENC[AES256_GCM,data:x]", "sops": SOPS_METADATA})
    never.chmod(0)  # any attempt to list it would fail
    try:
        normalize_sources([{"bundle": str(never)}], "test")
        first = write_documents(tmp_path / "first.yaml", kubeconfig_document())
        resolution = resolve([{"bundle": first}, {"bundle": str(never)}], "target-cluster")
    finally:
        never.chmod(0o700)
    assert [entry["status"] for entry in resolution.provenance["sources"]] == ["read", "unread"]


def test_optional_bundle_that_fails_is_skipped_with_the_reason(tmp_path):
    other = write_documents(tmp_path / "other.yaml", kubeconfig_document())
    resolution = resolve([{"bundle": str(tmp_path / "absent"), "optional": True}, {"bundle": other}],
                         "target-cluster")
    assert resolution.provenance["sources"][0] == {
        "index": 1, "kind": "bundle", "location": str(tmp_path / "absent"), "status": "skipped",
        "reason": "no such file or directory"}


class FakeSops:
    """Stands for the sops binary: 'decrypts' by dropping the sops metadata and the ENC marks of a test."""

    def __init__(self, plaintext_by_text=None, plaintext_file=None):
        self.plaintext_by_text = plaintext_by_text or {}
        self.plaintext_file = plaintext_file
        self.calls = []

    def document(self, text):
        self.calls.append(("document", text))
        return self.plaintext_by_text[text].encode()

    def file(self, path):
        self.calls.append(("file", path))
        return self.plaintext_file.encode()


def read_with(fake, bundle, name=None):
    return read_bundle_kubeconfig(bundle, name, Origin(1, "bundle", bundle, path=bundle), fake.document, fake.file)


def test_a_document_encrypted_on_its_own_is_decrypted_alone(tmp_path):
    encrypted = textwrap.dedent("""\
        ---
        apiVersion: airshipit.org/v1alpha1
        kind: KubeConfig
        metadata: {name: default}
        config: ENC[AES256_GCM,data:x]
        sops: {mac: 'ENC[AES256_GCM,data:m1]', version: 3.9.0}
        """)
    other = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: ENC[AES256_GCM,data:y]\n" \
            "sops: {mac: 'ENC[AES256_GCM,data:m2]', version: 3.9.0}\n"
    file = tmp_path / "secrets.yaml"
    file.write_text("# site secrets\n" + CLUSTER_MAP + other + encrypted)
    fake = FakeSops({encrypted: yaml.safe_dump(kubeconfig_document())})
    config = read_with(fake, str(file))
    assert fake.calls == [("document", encrypted)]  # neither the other documents nor the whole file
    assert sorted(config.contexts) == ["target-cluster"]


def test_a_file_sops_encrypted_as_one_is_decrypted_whole(tmp_path):
    documents = [{"apiVersion": "v1", "kind": "ConfigMap", "data": "ENC[x]", "sops": SOPS_METADATA},
                 {**kubeconfig_document(), "config": "ENC[y]", "sops": SOPS_METADATA}]
    file = write_documents(tmp_path / "all.enc.yaml", *documents)
    plaintext = yaml.safe_dump_all([{"apiVersion": "v1", "kind": "ConfigMap"}, kubeconfig_document("default", "c2")])
    fake = FakeSops(plaintext_file=plaintext)
    config = read_with(fake, file)
    assert fake.calls == [("file", file)]
    assert sorted(config.contexts) == ["c2"]


def test_sops_failure_names_the_document(tmp_path):
    file = write_documents(tmp_path / "k.yaml", {**kubeconfig_document(), "config": "ENC[y]", "sops": SOPS_METADATA})

    def refuse(_text):
        raise PhasekitError("sops could not decrypt: no age identity matches the file's recipients")

    with pytest.raises(PhasekitError, match=f"^{file} document 1 \\(KubeConfig default\\): sops could not decrypt"):
        read_bundle_kubeconfig(file, None, Origin(1, "bundle", file), refuse, refuse)


def sops_tools():
    """sops and age-keygen from PATH, $PHASEKIT_BIN or the tools hack/build-tools.sh built in the cache."""
    cache = os.environ.get("PHASEKIT_CACHE", os.path.expanduser("~/.cache/phasekit"))
    built = sorted(glob.glob(os.path.join(cache, "bin", "k8s-*")), reverse=True)
    search = os.pathsep.join(filter(None, [os.environ.get("PATH"), os.environ.get("PHASEKIT_BIN"), *built]))
    found = {name: shutil.which(name, path=search) for name in ("sops", "age-keygen")}
    if not all(found.values()):
        # a failure, not a skip: `make units` builds the tools first, so CI always runs these
        pytest.fail("sops and age-keygen are not on PATH, in $PHASEKIT_BIN or in the cache (make tools builds them)")
    return found


@pytest.fixture
def age(tmp_path):
    tools = sops_tools()
    key_file = tmp_path / "age.key"
    subprocess.run([tools["age-keygen"], "-o", str(key_file)], check=True, capture_output=True)
    recipient = next(line.split()[-1] for line in key_file.read_text().splitlines() if "public key" in line)
    environ = {"PATH": os.path.dirname(tools["sops"]), "SOPS_AGE_KEY_FILE": str(key_file), "HOME": str(tmp_path)}

    def encrypt(documents: list) -> str:
        plain = tmp_path / "plain.yaml"
        plain.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        return subprocess.run([tools["sops"], "--encrypt", "--age", recipient, "--unencrypted-regex",
                               "^(kind|apiVersion|group|metadata)$", str(plain)],
                              check=True, capture_output=True, text=True, env=environ).stdout

    return encrypt, environ


def test_sops_encrypted_documents_in_a_mixed_file(tmp_path, age):
    """airshipctl's layout: documents encrypted one by one beside plain ones, in one file; only the KubeConfig
    document is decrypted, and the resolved kubeconfig holds its credentials."""
    encrypt, environ = age
    secret = encrypt([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}}])
    kubeconfig = encrypt([kubeconfig_document()])
    assert TOKEN not in kubeconfig
    (tmp_path / "site.yaml").write_text(CLUSTER_MAP + "---\n" + secret + "---\n" + kubeconfig)
    resolution = resolve({"bundle": str(tmp_path / "site.yaml")}, "target-cluster", environ)
    assert resolution.config["users"][0]["user"]["token"] == TOKEN


def test_sops_file_encrypted_as_one(tmp_path, age):
    encrypt, environ = age
    (tmp_path / "site.enc.yaml").write_text(encrypt([yaml.safe_load(CLUSTER_MAP), kubeconfig_document()]))
    resolution = resolve({"bundle": str(tmp_path / "site.enc.yaml")}, "target-cluster", environ)
    assert resolution.config["users"][0]["user"]["token"] == TOKEN


def test_sops_without_the_key_fails_naming_the_document(tmp_path, age):
    encrypt, environ = age
    file = tmp_path / "k.yaml"
    file.write_text(encrypt([kubeconfig_document()]))
    with pytest.raises(PhasekitError) as caught:
        resolve({"bundle": str(file)}, "target-cluster", {**environ, "SOPS_AGE_KEY_FILE": str(tmp_path / "none")})
    assert str(caught.value).startswith(f"kubeconfig source 1 (bundle: {file}): {file} document 1 (KubeConfig "
                                        "default): sops could not decrypt: ")
    assert TOKEN not in str(caught.value)

# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Differential test: our kubeconfig merge against the real kubectl, on generated kubeconfig sets.

Every case is a directory of kubeconfig files (name collisions across files,
relative and absolute certificate paths, exec and auth-provider users, extensions,
preferences, missing, duplicated and empty list entries, malformed files) plus a
``KUBECONFIG``-style list. For each case kubectl runs
``config view --raw -o json`` with some of ``--flatten`` / ``--minify --context X``
and ``view_kubeconfig`` must return the same document, or both must fail.

Normalisation: none beyond reading kubectl's output as JSON (``-o json``) instead
of YAML, so YAML formatting cannot differ. Numbers compare by value
(kubectl prints ``1`` for an extension value written ``1.0``).
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import view_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

SEED = 20250601
CASES = 300
CLUSTERS = ["c0", "c1", "c2", "c3"]
USERS = ["u0", "u1", "u2", "u3"]
CONTEXTS = ["x0", "x1", "x2", "x3"]
FILE_NAMES = ["a.yaml", "sub/b.yaml", "sub/deeper/c.yaml", "d.json", "e.yaml"]
# plain scalars whose YAML 1.1 type differs between parsers; kubectl decides what they are
TRICKY_SCALARS = ["y", "n", "yes", "off", "1e3", "0x1F", "0o17", "08", "1_000", "+1", ".5", "-", "1:20",
                  "2001-12-14", "2001-12-14 21:59:43.10", "~", "null", "12345678901234567890", "1e400",
                  "0b101", "Yes", "NO", ".inf", "-.INF", "v1.0", "true1", "0.", "+.5e3"]
MALFORMED = [
    "clusters: [\n",                                   # YAML syntax
    "- just\n- a list\n",                              # not a mapping
    "clusters: {}\n",                                  # wrong type for a list
    "users:\n- name: dup\n- name: dup\n",              # duplicate name in one file
    "clusters:\n- name: c\n  cluster: {certificate-authority-data: 'abc'}\n",  # bad base64
    "clusters:\n- name: c\n  cluster: {server: true}\n",  # wrong scalar type
    "kind: Pod\n",                                     # not a Config
    "apiVersion: v2\n",                                # unknown version
    "users:\n- name: u\n  user: {as-groups: [1]}\n",   # list item type
    "contexts:\n- name: x\n  context: 'text'\n",       # struct given a string
    "\tcurrent-context: x\n",                          # tab indentation
]


def _maybe(rng: random.Random, probability: float) -> bool:
    return rng.random() < probability


def _extensions(rng: random.Random) -> list:
    names = rng.sample(["e0", "e1", "e2"], rng.randint(1, 2))
    values = [None, "text", 7, {"nested": {"list": [1, "two", True]}}, [1, 2], {"k": "v", "n": 1.0}]
    return [{"name": name, "extension": rng.choice(values)} if _maybe(rng, 0.8) else {"name": name}
            for name in names]


def _cert_reference(rng: random.Random, case: Path, file_dir: Path, name: str) -> str:
    """A path to a certificate file: relative to the defining file, absolute, or missing."""
    target = case / "certs" / name
    if _maybe(rng, 0.95):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f"-----BEGIN {name}-----\n{rng.random()}\n".encode())
    if _maybe(rng, 0.5):
        return str(target)
    return os.path.relpath(target, file_dir)


def _cluster(rng, case, file_dir) -> dict:
    cluster = {"server": f"https://{rng.choice(['alpha', 'beta', 'gamma'])}.test:{rng.randint(6000, 7000)}"}
    if _maybe(rng, 0.4):
        cluster["certificate-authority"] = _cert_reference(rng, case, file_dir, f"ca{rng.randint(0, 3)}.crt")
    if _maybe(rng, 0.05 if "certificate-authority" in cluster else 0.4):  # both: flatten must fail
        cluster["certificate-authority-data"] = base64.b64encode(rng.randbytes(24)).decode()
    for key, value in (("insecure-skip-tls-verify", True), ("tls-server-name", "api.test"),
                       ("proxy-url", "http://proxy.test:3128"), ("disable-compression", True)):
        if _maybe(rng, 0.15):
            cluster[key] = value
    if _maybe(rng, 0.15):
        cluster["extensions"] = _extensions(rng)
    if _maybe(rng, 0.05):
        del cluster["server"]
    return cluster


def _exec(rng) -> dict:
    spec = {"command": rng.choice(["./bin/credential", "bin/credential", "credential", "/usr/bin/credential"])}
    spec["apiVersion"] = rng.choice(["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"])
    if _maybe(rng, 0.5):
        spec["args"] = rng.choice([[], ["get-token", "--cluster", "x"]])
    if _maybe(rng, 0.4):
        spec["env"] = [{"name": "SECRET_ENV", "value": "s3cr3t"}, {"name": "ONLY_NAME"}]
    if _maybe(rng, 0.3):
        spec["interactiveMode"] = rng.choice(["Never", "IfAvailable", "Always"])
    if _maybe(rng, 0.3):
        spec["provideClusterInfo"] = True
    if _maybe(rng, 0.2):
        spec["installHint"] = "install the credential plugin"
    return spec


def _user(rng, case, file_dir) -> dict:
    kind = rng.choice(["token", "token-file", "cert-files", "cert-data", "basic", "exec", "auth-provider",
                       "impersonate", "empty"])
    user: dict = {}
    if kind == "token":
        user["token"] = f"token-{rng.randint(0, 10**9)}"
    elif kind == "token-file":
        user["tokenFile"] = rng.choice(["tokens/t", "/var/run/secrets/token", "../token"])
    elif kind == "cert-files":
        user["client-certificate"] = _cert_reference(rng, case, file_dir, f"client{rng.randint(0, 3)}.crt")
        user["client-key"] = _cert_reference(rng, case, file_dir, f"client{rng.randint(0, 3)}.key")
        if _maybe(rng, 0.05):
            user["client-key-data"] = base64.b64encode(b"conflicting key").decode()
    elif kind == "cert-data":
        user["client-certificate-data"] = base64.b64encode(rng.randbytes(30)).decode()
        user["client-key-data"] = base64.b64encode(rng.randbytes(30)).decode()
    elif kind == "basic":
        user.update(username="admin", password=f"pw{rng.randint(0, 999)}")
    elif kind == "exec":
        user["exec"] = _exec(rng)
    elif kind == "auth-provider":
        user["auth-provider"] = {"name": "oidc"}
        if _maybe(rng, 0.7):
            user["auth-provider"]["config"] = {"client-id": "kubectl", "id-token": "eyJ.x.y"}
    elif kind == "impersonate":
        user.update({"as": "jane", "as-groups": rng.choice([[], ["devs", "ops"]]),
                     "as-user-extra": {"scopes": ["view"], "empty": []}, "as-uid": "1234"})
    if _maybe(rng, 0.1):
        user["extensions"] = _extensions(rng)
    return user


def _context(rng) -> dict:
    context = {"cluster": rng.choices(CLUSTERS + ["", "nowhere"], weights=[5, 5, 5, 5, 1, 1])[0],
               "user": rng.choices(USERS + ["", "nobody"], weights=[5, 5, 5, 5, 2, 1])[0]}
    if _maybe(rng, 0.4):
        context["namespace"] = rng.choice(["default", "kube-system", "team-a"])
    if _maybe(rng, 0.1):
        context["extensions"] = _extensions(rng)
    return context


def _kubeconfig_text(rng, case: Path, file_dir: Path, name: str) -> str:
    roll = rng.random()
    if roll < 0.03:
        return rng.choice(MALFORMED)
    if roll < 0.06:
        return rng.choice(["", "  \n# only a comment\n", "null\n", "---\ncurrent-context: x1\n---\nbad: [\n"])
    if roll < 0.09:
        return f"current-context: {rng.choice(TRICKY_SCALARS)}\n"
    document: dict = {}
    if _maybe(rng, 0.8):
        document["apiVersion"] = "v1"
        document["kind"] = "Config"
    for section, names, make in (("clusters", CLUSTERS, lambda: _cluster(rng, case, file_dir)),
                                 ("users", USERS, lambda: _user(rng, case, file_dir)),
                                 ("contexts", CONTEXTS, lambda: _context(rng))):
        if _maybe(rng, 0.85):
            body = {"clusters": "cluster", "users": "user", "contexts": "context"}[section]
            count = rng.randint(1, 4)
            document[section] = [{"name": entry, body: make()} for entry in rng.sample(names, count)]
    if _maybe(rng, 0.6):
        document["current-context"] = rng.choice(CONTEXTS + [""])
    if _maybe(rng, 0.15):
        document["preferences"] = {"colors": rng.choice([True, False])}
        if _maybe(rng, 0.5):
            document["preferences"]["extensions"] = _extensions(rng)
    if _maybe(rng, 0.15):
        document["extensions"] = _extensions(rng)
    if _maybe(rng, 0.1):
        document["unknownField"] = {"ignored": True}
    if name.endswith(".json"):
        return json.dumps(document, indent=1)
    return yaml.safe_dump(document, default_flow_style=rng.choice([False, None]))


def _make_case(rng: random.Random, case: Path) -> tuple[str, list[str]]:
    """Write one case's files; return its KUBECONFIG list and the kubectl flags to try."""
    case.mkdir(parents=True)
    written = rng.sample(FILE_NAMES, rng.randint(1, 4))
    for name in written:
        path = case / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_kubeconfig_text(rng, case, path.parent, name))
    entries = []
    for name in written:
        entries.append(str(case / name) if _maybe(rng, 0.3) else name)
    if _maybe(rng, 0.4):
        entries.insert(rng.randint(0, len(entries)), rng.choice(["missing.yaml", "sub/missing.yaml", ""]))
    if _maybe(rng, 0.2):
        entries.append(rng.choice(entries))  # duplicate entry: read once
    if _maybe(rng, 0.03):
        (case / "adir").mkdir()
        entries.append("adir")
    rng.shuffle(entries) if _maybe(rng, 0.3) else None
    context = rng.choices(CONTEXTS + ["nope"], weights=[4, 4, 4, 4, 1])[0]
    flags = rng.choices([[], ["--flatten"], ["--minify", "--context", context],
                         ["--minify", "--flatten", "--context", context], ["--minify"]],
                        weights=[3, 2, 2, 2, 1])[0]
    return ":".join(entries), flags


def _kubectl_view(kubectl: Path, case: Path, kubeconfig: str, flags: list[str]):
    env = {"PATH": os.environ["PATH"], "HOME": str(case), "KUBECONFIG": kubeconfig}
    proc = subprocess.run([str(kubectl), "config", "view", "--raw", "-o", "json", *flags], cwd=case, env=env,
                          capture_output=True, text=True, check=False)
    return (json.loads(proc.stdout) if proc.returncode == 0 else None), proc.stderr


def _ours(case: Path, kubeconfig: str, flags: list[str]):
    previous = os.getcwd()
    os.chdir(case)
    try:
        context = flags[flags.index("--context") + 1] if "--context" in flags else None
        return view_kubeconfig(normalize_sources({"path": kubeconfig}, "test"), context,
                               minify="--minify" in flags, flatten="--flatten" in flags), None
    except PhasekitError as err:
        return None, str(err)
    finally:
        os.chdir(previous)


@pytest.fixture(scope="module")
def generated_cases(tmp_path_factory, bin_dir):
    """All cases with kubectl's answers, computed in parallel threads."""
    rng = random.Random(SEED)
    root = tmp_path_factory.mktemp("kubeconfig-differential")
    runs = []
    for number in range(CASES):
        case = root / f"case{number:03d}"
        runs.append((case, *_make_case(rng, case)))
    kubectl = bin_dir / "kubectl"
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda run: _kubectl_view(kubectl, *run), runs))
    return list(zip(runs, answers))


def test_view_matches_kubectl(generated_cases):
    mismatches = []
    outcomes = {"equal": 0, "both-failed": 0}
    for (case, kubeconfig, flags), (expected, kubectl_error) in generated_cases:
        actual, our_error = _ours(case, kubeconfig, flags)
        if expected is None and actual is None:
            outcomes["both-failed"] += 1
            continue
        if expected == actual:
            outcomes["equal"] += 1
            continue
        mismatches.append(f"{case.name} KUBECONFIG={kubeconfig} {' '.join(flags)}\n"
                          f"  kubectl: {json.dumps(expected, sort_keys=True) if expected else kubectl_error}\n"
                          f"  ours:    {json.dumps(actual, sort_keys=True) if actual else our_error}")
    assert not mismatches, f"{len(mismatches)} of {len(generated_cases)} differ:\n" + "\n".join(mismatches[:10])
    # the generator must exercise both outcomes, or it tests nothing
    assert outcomes["equal"] > len(generated_cases) / 2
    assert outcomes["both-failed"] > len(generated_cases) / 10

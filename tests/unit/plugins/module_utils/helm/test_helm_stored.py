"""A release's objects read from the Secret helm stores each revision in (what ``helm --wait`` waits for)."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.stored import decoded_release, stored_manifest_objects

MANIFEST = """\
---
# Source: web/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rel-web
---
# Source: web/templates/empty.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: rel-settings
"""


def stored(release: dict, compress: bool = True) -> str:
    """``data.release`` as helm's Secret driver writes it."""
    raw = json.dumps(release).encode()
    return base64.b64encode(base64.b64encode(gzip.compress(raw) if compress else raw)).decode()


def secret(version: int, manifest: str) -> dict:
    return {"metadata": {"name": f"sh.helm.release.v1.rel.v{version}",
                         "labels": {"owner": "helm", "name": "rel", "version": str(version)}},
            "data": {"release": stored({"name": "rel", "version": version, "manifest": manifest})}}


class Secrets:
    def __init__(self, items):
        self.items, self.asked = items, []

    def list(self, path, label_selector=None):
        self.asked.append((path, label_selector))
        return self.items


@pytest.mark.parametrize("items, kinds", [
    ([], []),
    ([secret(1, MANIFEST)], ["Deployment", "ConfigMap"]),
    ([secret(2, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: only}\n"), secret(10, MANIFEST),
      secret(9, "")], ["Deployment", "ConfigMap"]),
], ids=["no-stored-revision", "empty-documents-left-out", "the-newest-revision-by-number"])
def test_stored_manifest_objects(items, kinds):
    session = Secrets(items)
    found = stored_manifest_objects(session, "rel", "apps")
    assert [obj["kind"] for obj in found] == kinds
    assert session.asked == [("/api/v1/namespaces/apps/secrets", "owner=helm,name=rel")]


@pytest.mark.parametrize("data, manifest", [
    (stored({"manifest": "kind: A"}), "kind: A"),
    (stored({"manifest": "kind: B"}, compress=False), "kind: B"),
], ids=["gzipped-as-helm-writes-it", "plain-json-as-older-helm-wrote-it"])
def test_decoded_release(data, manifest):
    assert decoded_release(data)["manifest"] == manifest


def test_an_unreadable_release_says_so():
    with pytest.raises(PhasekitError, match="helm's stored release could not be read"):
        decoded_release("not base64!")

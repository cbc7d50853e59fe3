# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's sites read as the collection's own: phase documents, ``KubeConfig`` bundles and ``ClusterMap``
documents, through the registries the core exposes (one line each in ``register``; called by ``module_utils/formats.py``)."""

from __future__ import annotations


def register() -> None:
    """Add airshipctl's readers to the core's registries."""
    # imported here: the core's registries import nothing of this package until they are first asked
    from ansible_collections.phasekit.kube.plugins.module_utils.airship import bundle, cluster_map, convert, phases
    from ansible_collections.phasekit.kube.plugins.module_utils.inventory.sources import register_inventory_source
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import register_source_kind
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import DocumentReader, register_document_reader

    register_document_reader(DocumentReader("airshipctl", phases.claim_documents, convert.convert_documents))
    register_source_kind(bundle.SOURCE_KIND)
    register_inventory_source(cluster_map.INVENTORY_SOURCE)

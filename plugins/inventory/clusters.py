# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Inventory plugin: a fleet of Kubernetes clusters, one inventory host per cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
name: clusters
version_added: 0.1.0
short_description: A fleet of Kubernetes clusters as inventory hosts
description:
  - Builds the cluster map of a site as an inventory. Every cluster becomes one host with
    C(ansible_connection=local); the collection's actions talk to the cluster's API from the controller.
  - "Clusters come from any combination of four sources in one configuration file, read in this order:
    O(kubeconfigs) (one host per context of kubeconfig files), O(airship_cluster_map) (the C(ClusterMap) document
    of an airshipctl site), O(site) (site files listing clusters with their parent, labels and kubeconfig sources)
    and O(cluster_api) (the C(Cluster) objects of Cluster API management clusters, each child's kubeconfig being
    the C(<name>-kubeconfig) Secret on its parent)."
  - When several sources name the same host, the later source's fields win and labels are merged,
    so a site file can add parents and labels to hosts found in a kubeconfig file.
  - "Every host gets the variables C(ansible_connection) (V(local)), C(kube_kubeconfig) (where its kubeconfig
    comes from: a path, a source mapping or a list of them), C(kube_context), C(kube_parent) (when it has a parent),
    C(kube_cluster) (when set in a site file), C(kube_labels) and, for discovered clusters, C(kube_cluster_api)."
  - The inventory only ever holds references to kubeconfigs (file paths, variable names, Secret names), never
    kubeconfig contents, so C(ansible-inventory --list) shows no credentials. Inline C(content) sources and
    literal C(url) headers are refused.
  - Hosts are grouped by parent (C(children_of_<parent>)) and by label (C(label_<key>_<value>)); O(compose),
    O(groups) and O(keyed_groups) add more. Results can be cached (O(cache)).
  - The configuration file name must end in C(.clusters.yml) or C(.clusters.yaml).
author:
  - phasekit.kube contributors (@phasekit)
requirements:
  - kubernetes (Python package, only for O(cluster_api) discovery)
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this file as a configuration for this plugin.
    required: true
    type: str
    choices: [phasekit.kube.clusters]
  kubeconfigs:
    description:
      - Kubeconfig files to turn into hosts, one host per context (the host name is the context name
        unless O(kubeconfigs[].host_names) says otherwise).
      - A string entry is a shorthand for O(kubeconfigs[].path).
      - Only context names are read; the files stay where they are and hosts refer to them.
    type: list
    elements: raw
    default: []
    suboptions:
      path:
        description:
          - A kubeconfig file or a C(KUBECONFIG)-style list of files (C(a.yaml:b.yaml)), merged by kubectl's rules.
          - Relative paths are relative to this configuration file. C(~) is kept and expanded when used.
          - Hosts get this (anchored) string as C(kube_kubeconfig).
        type: str
      env:
        description:
          - An environment variable holding a C(KUBECONFIG)-style list, read now to list contexts.
          - "Hosts get C({env: NAME}) as C(kube_kubeconfig), so the variable is read again when a play runs."
          - Exactly one of O(kubeconfigs[].path) and O(kubeconfigs[].env) is required.
        type: str
      contexts:
        description:
          - Shell patterns of the context names that become hosts.
          - A name without C(*), C(?) or C([) that matches no context fails, listing the contexts that exist;
            a pattern that matches none is a warning.
        type: list
        elements: str
        default: ['*']
      host_names:
        description: Host name for a context, when the context name is not a good host name.
        type: dict
        default: {}
      parent:
        description: Inventory host name of the parent cluster of every host of this entry.
        type: str
      labels:
        description: Labels given to every host of this entry.
        type: dict
        default: {}
  airship_cluster_map:
    description:
      - airshipctl C(ClusterMap) documents (C(airshipit.org/v1alpha1)) to turn into hosts, one host per key of
        C(map) (the name airshipctl's C(Phase) C(metadata.clusterName) uses). A string entry is a shorthand for
        O(airship_cluster_map[].path).
      - "C(parent) becomes C(kube_parent). C(kubeconfigSources) become C(kube_kubeconfig), in order:
        C(filesystem) a C(path) source (relative to the ClusterMap's file), C(clusterAPI) a C(secret) source
        reading C(<name>-kubeconfig) in its namespace on the parent, C(bundle) a C(bundle) source reading the
        C(KubeConfig) document among the documents O(airship_cluster_map[].path) names (decrypted with sops, if
        encrypted, when a play needs the cluster), or the O(airship_cluster_map[].bundle) source(s) when given.
        Every source but the last gets C(optional: true), as airshipctl tries the sources in order
        until one works. The sources' C(contextName) (or the older C(kubeconfigContext)) becomes
        C(kube_context); they must agree."
      - Only C(ClusterMap) documents are read; nothing is decrypted or contacted. Hosts hold references only.
    type: list
    elements: raw
    default: []
    suboptions:
      path:
        description:
          - A file of airshipctl documents, or a directory whose C(*.yaml) and C(*.yml) files are read (not
            recursively), such as C(manifests/site/<site>/phases). Relative to this configuration file.
        type: str
        required: true
      bundle:
        description:
          - "The kubeconfig source(s) used for every C(bundle) source of the map instead of the default
            C({bundle: <path>}) (the C(KubeConfig) document among the documents of O(airship_cluster_map[].path)):
            a path, a source mapping or a list (see the C(phasekit.kube.kubeconfig) lookup), for example
            C({sops: secrets/site-kubeconfig.enc.yaml}) holding the document's C(config), or
            C({bundle: ../kubeconfigs, name: site}). Relative paths are relative to this configuration file."
        type: raw
  site:
    description:
      - Site files listing clusters (the cluster map), relative to this configuration file.
      - "A site file holds one mapping, C(clusters), from host name to C(kubeconfig) (a path, a source
        mapping or a list of source mappings, see the C(phasekit.kube.kubeconfig) lookup), C(context), C(parent),
        C(cluster) (the cluster the context must use), C(labels) and C(vars) (further host variables)."
      - Relative paths in kubeconfig sources are relative to the site file. Site files are read like any
        inventory file, so Jinja2 templates and vault-encrypted values in them work.
    type: list
    elements: str
    default: []
  cluster_api:
    description:
      - "Cluster API management clusters to discover child clusters on. Each entry lists the
        C(clusters.cluster.x-k8s.io) objects on the management host and adds each as a host whose
        C(kube_parent) is the management host and whose C(kube_kubeconfig) is
        C({secret: {host: <management host>, name: <cluster>-kubeconfig, namespace: <cluster namespace>}})."
      - The management host must be defined by an earlier source of this file or by an earlier inventory
        source. Its kubeconfig is resolved as in a play (its C(kube_kubeconfig)/C(kube_context), then
        E(K8S_AUTH_KUBECONFIG)/E(K8S_AUTH_CONTEXT) in the controller's environment, then kubectl's default), with
        every source kind; a C(secret)
        source is read from its parent among the hosts known so far. Variables are used as written,
        Jinja2 templates in them are not rendered.
      - Discovered hosts do not get C(kube_context); the Secret's current context is used
        (Cluster API writes C(<name>-admin@<name>)).
    type: list
    elements: dict
    default: []
    suboptions:
      host:
        description: Inventory host name of the management cluster.
        type: str
        required: true
      namespaces:
        description: Namespaces to list Clusters in (default all namespaces).
        type: list
        elements: str
        default: []
      label_selector:
        description: Kubernetes label selector for the Clusters to add.
        type: str
      version:
        description: API version of C(cluster.x-k8s.io) to list.
        type: str
        default: v1beta1
      host_name:
        description:
          - Host name of a discovered cluster, a Python format string with the keys C(name), C(namespace)
            and C(management).
          - Use V({namespace}-{name}) when clusters in different namespaces share names.
        type: str
        default: '{name}'
      labels:
        description: Labels given to every discovered host of this entry.
        type: dict
        default: {}
      cluster_labels:
        description: Copy the labels of each C(Cluster) object into C(kube_labels).
        type: bool
        default: true
      timeout:
        description: Seconds to wait for the management cluster's API.
        type: int
        default: 30
  parent_groups:
    description: Add every host with a parent to the group C(children_of_<parent>).
    type: bool
    default: true
  label_groups:
    description:
      - Shell patterns of label keys that make groups C(label_<key>_<value>) (characters not allowed in
        group names become C(_)). V([]) makes none.
    type: list
    elements: str
    default: ['*']
notes:
  - Paths and names in host variables are references; the C(phasekit.kube.kubeconfig) lookup and the
    collection's actions resolve them when a play needs that cluster, once per run.
seealso:
  - name: Inventory and fleets
    description: How to describe a fleet with this plugin (docs/inventory.md in the collection).
    link: https://github.com/phasekit/phasekit.kube/blob/main/docs/inventory.md
"""

EXAMPLES = r"""
# fleet.clusters.yml: every context of two kubeconfig files is a host
plugin: phasekit.kube.clusters
kubeconfigs:
  - ~/.kube/config
  - path: kubeconfigs/prod-eu.yaml:kubeconfigs/prod-us.yaml
    contexts: ['prod-*']
    host_names: {prod-eu-admin@prod-eu: prod-eu}
    labels: {env: prod}

# Each configuration is a file of its own, one YAML document. More of them, commented out:

# # site.clusters.yml: a hand-written cluster map, plus the clusters Cluster API
# # created on the management cluster, grouped by parent, label and version
# plugin: phasekit.kube.clusters
# site:
#   - clusters.yml
# cluster_api:
#   - host: mgmt
#     namespaces: [fleet]
#     label_selector: phasekit.io/managed=true
#     labels: {provisioner: capi}
# keyed_groups:
#   - key: kube_cluster_api.version | default(None)
#     prefix: k8s
# compose:
#   kube_context: "inventory_hostname ~ '-admin@' ~ inventory_hostname if kube_cluster_api is defined else kube_context"
# groups:
#   production: kube_labels.env | default('') == 'prod'
#
# # clusters.yml (the site file named above)
# # clusters:
# #   mgmt:
# #     kubeconfig: kubeconfigs/mgmt.yaml
# #     context: mgmt-admin
# #     labels: {env: prod}
# #   edge01:
# #     parent: mgmt
# #     kubeconfig:
# #       - sops: secrets/edge01.enc.yaml
# #     labels: {env: prod, site: edge}

# # airship.clusters.yml: an airshipctl site's ClusterMap as it is; its bundle sources read the site's
# # KubeConfig document in that directory (decrypted with sops when a play needs the cluster)
# plugin: phasekit.kube.clusters
# airship_cluster_map:
#   - path: ../manifests/site/test-site/phases
#   # or, with the kubeconfig kept in a file of its own:
#   # - path: ../manifests/site/test-site/phases
#   #   bundle: {sops: secrets/site-kubeconfig.enc.yaml}

# # cached.clusters.yml: discovery results kept for an hour between runs
# plugin: phasekit.kube.clusters
# site: [clusters.yml]
# cache: true
# cache_plugin: ansible.builtin.jsonfile
# cache_connection: ~/.cache/phasekit/inventory
# cache_timeout: 3600
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.phasekit.kube.plugins.plugin_utils import compat
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_api import (
    hosts_from_cluster_objects,
    list_cluster_objects,
    parse_cluster_api_entry,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterMap, host_groups
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.kubeconfig_contexts import (
    context_names,
    hosts_from_contexts,
    parse_kubeconfigs_entry,
    unmatched_patterns,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.site_file import clusters_from_site
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.sources import inventory_sources
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import HostResolver

CONFIG_SUFFIXES = (".clusters.yml", ".clusters.yaml")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Reads ``*.clusters.yml`` files into cluster hosts."""

    NAME = "phasekit.kube.clusters"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(CONFIG_SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        cached = None
        if use_cache:
            try:
                cached = self._cache[cache_key]
            except KeyError:
                update_cache = True
        try:
            cluster_map = ClusterMap.from_data(cached) if cached is not None else self._cluster_map(path)
            for warning in cluster_map.check_parents():
                self.display.warning(warning)
        except PhasekitError as err:
            raise AnsibleParserError(str(err)) from None
        if update_cache:
            self._cache[cache_key] = cluster_map.to_data()
        self._populate(cluster_map)

    def _cluster_map(self, path: str) -> ClusterMap:
        """Read every source of the configuration file, in order, into one cluster map."""
        base_dir = os.path.dirname(os.path.abspath(path))
        cluster_map = ClusterMap()
        for index, raw in enumerate(self.get_option("kubeconfigs"), start=1):
            where = f"{path}: kubeconfigs[{index}]"
            entry = parse_kubeconfigs_entry(raw, base_dir=base_dir, where=where)
            contexts = context_names(entry["source"], where=where)
            if not contexts:
                self.display.warning(f"{where}: no contexts found")
            for warning in unmatched_patterns(contexts, entry, where=where):
                self.display.warning(warning)
            for host in hosts_from_contexts(contexts, entry, origin=where):
                cluster_map.add(host)
        for source in inventory_sources():
            for index, raw in enumerate(self.get_option(source.option), start=1):
                source.add_hosts(raw, base_dir=base_dir, where=f"{path}: {source.option}[{index}]", add=cluster_map.add)
        for site_path in self.get_option("site"):
            site_path = os.path.join(base_dir, os.path.expanduser(site_path))
            data = self._load_site_file(site_path)
            for host in clusters_from_site(data, path=site_path, base_dir=os.path.dirname(site_path)):
                cluster_map.add(host)
        for index, raw in enumerate(self.get_option("cluster_api"), start=1):
            where = f"{path}: cluster_api[{index}]"
            entry = parse_cluster_api_entry(raw, where=where)
            where = f"{where} (management host {entry['host']})"
            resolution = self._resolve_management_host(cluster_map, entry["host"], where)
            with api_client(resolution.config, resolution.context) as api:
                objects = list_cluster_objects(ApiSession(api, read_timeout=entry["timeout"]), entry, where=where)
            for host in hosts_from_cluster_objects(objects, entry, origin=where):
                cluster_map.add(host)
        return cluster_map

    def _load_site_file(self, site_path: str):
        if not os.path.isfile(site_path):
            raise PhasekitError("site file not found", where=site_path)
        try:
            # Like any inventory file: templates trusted, vault-encrypted values allowed.
            return compat.load_trusted_file(self.loader, site_path)
        except Exception as exc:  # the loader's YAML errors name line and column
            raise PhasekitError(f"cannot read site file: {exc}", where=site_path) from None

    def _resolve_management_host(self, cluster_map: ClusterMap, host: str, where: str):
        """The management host's kubeconfig, by the same precedence and source kinds a play uses.

        Hosts are those of this file so far and of earlier inventory sources; a Secret source
        is read from its parent among them. Their variables are used as written (not templated).
        """
        hostvars = {name: self.inventory.get_host(name).get_vars() for name in self.inventory.hosts}
        hostvars.update({known.name: known.host_vars() for known in cluster_map})
        if host not in hostvars:
            options = ", ".join(["kubeconfigs"] + [source.option for source in inventory_sources()])
            raise PhasekitError(f"management host {host!r} is not defined; define it earlier in this file "
                                f"({options} or site) or in an earlier inventory source; known: "
                                f"{', '.join(hostvars) or 'none'}", where=where)
        host_vars = hostvars[host]
        try:
            return HostResolver(self.loader, hostvars).resolve(host, host_vars.get, {})
        except PhasekitError as err:
            raise PhasekitError(str(err), where=where) from None

    def _populate(self, cluster_map: ClusterMap):
        strict = self.get_option("strict")
        for host in cluster_map:
            self.inventory.add_host(host.name)
            for name, value in host.host_vars().items():
                self.inventory.set_variable(host.name, name, value)
            for group in host_groups(host, parent_groups=self.get_option("parent_groups"),
                                     label_patterns=self.get_option("label_groups")):
                group = self.inventory.add_group(self._sanitize_group_name(group))
                self.inventory.add_child(group, host.name)
            variables = self.inventory.get_host(host.name).get_vars()
            self._set_composite_vars(self.get_option("compose"), variables, host.name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, host.name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, host.name, strict=strict)

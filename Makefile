# phasekit.kube developer entry points. Everything installs what it needs into
# a cache outside the repository ($(CACHE)); a warm run only does the work.
#
#   make demo          venv + tools + clusters, then the example site end to end
#   make test          sanity + unit + integration (against real local clusters)
#   make bench         benchmarks against kubectl and kubernetes.core (apply, then fleet)
#   make clusters      start real local clusters (CLUSTERS="ephemeral target")
#   make clusters-down stop them and remove their state

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# The newest ansible-core 2.19 on Python 3.11; the newest release on newer Pythons.
CORE_ON_311 := ansible-core>=2.19,<2.20
ANSIBLE_CORE ?= $(if $(filter 3.11,$(PYVER)),$(CORE_ON_311),ansible-core)
CACHE ?= $(HOME)/.cache/phasekit
VENV ?= $(CACHE)/venv-$(PYVER)
K8S_VERSION ?= v1.34.4
TOOLS := $(CACHE)/bin/k8s-$(K8S_VERSION)
CLUSTERS ?= ephemeral target
PYTEST_ARGS ?=

export PHASEKIT_CACHE := $(CACHE)
export PHASEKIT_BIN := $(TOOLS)
export CLUSTERS K8S_VERSION
export PATH := $(TOOLS):$(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CACHE)/collections/$(notdir $(CURDIR))

VENV_STAMP := $(VENV)/.installed
TOOLS_STAMP := $(TOOLS)/.built
COLLECTION_LINK := $(ANSIBLE_COLLECTIONS_PATH)/ansible_collections/phasekit/kube

.PHONY: help venv tools clusters clusters-down collection-link demo test sanity ansible-test-sanity \
        ansible-lint docs-lint units integration bench build clean

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

venv: $(VENV_STAMP)
$(VENV_STAMP): requirements.txt tests/requirements-dev.txt
	@[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q '$(ANSIBLE_CORE)' -r tests/requirements-dev.txt
	bash hack/seed-get-pip.sh $(VENV)/bin/python
	@touch $@

tools: $(TOOLS_STAMP)
$(TOOLS_STAMP): hack/build-tools.sh
	bash hack/build-tools.sh
	@touch $@

collection-link:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@[ "$$(readlink $(COLLECTION_LINK) || true)" = "$(CURDIR)" ] || ln -sfn $(CURDIR) $(COLLECTION_LINK)

clusters: venv tools
	$(VENV)/bin/python hack/clusters.py up $(CLUSTERS)

clusters-down: venv
	$(VENV)/bin/python hack/clusters.py down

DEMO_CLUSTERS ?= ephemeral target workload01
demo: venv tools collection-link
	$(VENV)/bin/python hack/clusters.py up $(DEMO_CLUSTERS)
	bash hack/demo.sh

test: sanity units integration

sanity: ansible-test-sanity ansible-lint docs-lint

# ansible-test wants the collection under ansible_collections/NAMESPACE/NAME:
# copy the files git knows (tracked and new, not ignored) into such a tree.
SANITY_TREE := $(CACHE)/sanity-$(PYVER)/ansible_collections/phasekit/kube
ansible-test-sanity: venv
	rm -rf $(SANITY_TREE) && mkdir -p $(SANITY_TREE)
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
	  | tar --null -T - -cf - | tar -xf - -C $(SANITY_TREE)
	cd $(SANITY_TREE) && ansible-test sanity --color no --python $(PYVER) --requirements $(foreach d,hack bench,$(if $(wildcard $(d)),--exclude $(d)/))

ansible-lint: venv collection-link
	ansible-lint --nocolor

docs-lint: venv collection-link
	antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .

units: venv tools
	python -m pytest tests/unit -q -p no:cacheprovider $(PYTEST_ARGS)

integration: venv tools collection-link clusters
	python -m pytest tests/integration -q -p no:cacheprovider $(PYTEST_ARGS)

bench: venv tools collection-link clusters
	python bench/run.py
	python bench/fleet.py

build: venv
	ansible-galaxy collection build --force --output-path $(CACHE)/dist .

clean:
	rm -rf $(CACHE)/sanity-* $(CACHE)/dist tests/output

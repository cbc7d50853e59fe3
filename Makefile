# phasekit.kube developer entry points. Everything installs what it needs into
# a cache outside the repository ($(CACHE)); a warm run only does the work.
#
#   make demo          venv + tools + clusters, then the example site end to end
#   make test          what CI runs: every ansible-core line, both Kubernetes versions, the EE
#   make check         sanity + unit + integration on one ansible-core line (CORE=2.19 by default)
#   make units         the unit suite on one line (CORE=2.16 ... 2.22)
#   make integration   integration tests against real local clusters (full or smoke set, by CORE)
#   make integration-oldest  the Kubernetes-matrix tests against clusters of K8S_OLDEST
#   make ee            build the execution environment image phasekit-kube-ee:latest
#   make ee-test       run jobs in it the way AWX does (ansible-runner transmit | podman | process), and navigator
#   make bench         benchmarks against kubectl and kubernetes.core (apply, then fleet)
#   make clusters      start real local clusters (CLUSTERS="ephemeral target")
#   make clusters-down stop them (both Kubernetes versions) and remove their state

SHELL := /bin/bash
comma := ,
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE ?= $(HOME)/.cache/phasekit

# ansible-core lines CI proves, each as LINE:PYTHON (the controller Python it runs on).
# The lines in CORE_FULL run every integration test; the others the smoke set.
CORE_MATRIX ?= 2.16:3.11 2.17:3.12 2.18:3.13 2.19:3.11 2.20:3.12 2.21:3.13 2.22:3.13
CORE_FULL ?= 2.19 2.21
# Lines not released yet: their pre-releases are allowed (only for ansible-core, not every package as pip --pre would).
# Take a line out when its release is out.
CORE_PRERELEASE ?= 2.22
CORE ?= 2.19
CORE_LINES := $(foreach e,$(CORE_MATRIX),$(firstword $(subst :, ,$(e))))
# The newest line also runs ansible-lint (the full lines do, with the docs lint): the rules of the next ansible-core.
CORE_NEWEST := $(lastword $(CORE_LINES))
CORE_SPEC := ansible-core$(if $(filter $(CORE),$(CORE_PRERELEASE)),>=$(CORE).0rc1$(comma))==$(CORE).*
PYVER ?= $(word 2,$(subst :, ,$(filter $(CORE):%,$(CORE_MATRIX))))
ifeq ($(PYVER),)
$(error CORE=$(CORE) is not in CORE_MATRIX ($(CORE_MATRIX)))
endif
LEVEL := $(if $(filter $(CORE),$(CORE_FULL)),full,smoke)
LINT := $(if $(filter $(CORE),$(CORE_FULL) $(CORE_NEWEST)),yes,no)
PYTHON ?= $(shell bash hack/find-python.sh $(PYVER))
# The kubernetes Python client: requirements.txt bounds it to the majors CI runs (kube/client.py uses private
# members of its config loader). Every line gets the newest allowed; KUBERNETES_OLDEST_LINE the oldest allowed,
# read from requirements.txt (one home for the number), in a venv of its own.
KUBERNETES_OLDEST := $(shell sed -n 's/^kubernetes>=\([0-9]*\)[.0-9]*,.*/\1/p' requirements.txt)
KUBERNETES_OLDEST_LINE ?= 2.16
KUBERNETES_SPEC := $(if $(filter $(CORE),$(KUBERNETES_OLDEST_LINE)),'kubernetes==$(KUBERNETES_OLDEST).*')
# One venv per Python and ansible-core line (several engineers share the cache).
VENV ?= $(CACHE)/venv-$(PYVER)-core$(CORE)$(if $(KUBERNETES_SPEC),-kubernetes$(KUBERNETES_OLDEST))
VENV_REQUIREMENTS := $(if $(filter yes,$(LINT)),tests/requirements-dev.txt,tests/requirements-test.txt)

# Kubernetes: the newest release for the demo and the default clusters; the
# oldest claimed one for a second set of clusters beside them.
K8S_VERSION ?= v1.37.2
K8S_OLDEST ?= v1.30.14
TOOLS := $(CACHE)/bin/k8s-$(K8S_VERSION)
TOOLS_OLDEST := $(CACHE)/bin/k8s-$(K8S_OLDEST)
CLUSTERS ?= ephemeral target
PHASEKIT_CLUSTERS_DIR ?= $(CACHE)/clusters
CLUSTERS_DIR_OLDEST := $(PHASEKIT_CLUSTERS_DIR)-$(K8S_OLDEST)
PYTEST_ARGS ?=
# Unit tests are independent: as many workers as cores.
UNIT_WORKERS ?= auto
# Integration tests share two clusters (each test in its own namespaces). Three workers on two cores: a third of
# the time two workers left the CPU idle (a test waiting on a controller, a timeout, a rollout's pause).
INTEGRATION_WORKERS ?= 3

export PHASEKIT_CACHE := $(CACHE)
export PHASEKIT_BIN := $(TOOLS)
export PHASEKIT_CLUSTERS_DIR
export CLUSTERS K8S_VERSION
export PATH := $(TOOLS):$(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CACHE)/collections/$(notdir $(CURDIR))

VENV_STAMP := $(VENV)/.installed
TOOLS_STAMP := $(TOOLS)/.built
COLLECTION_LINK := $(ANSIBLE_COLLECTIONS_PATH)/ansible_collections/phasekit/kube

.PHONY: help venv venvs tools tools-oldest prepare clusters clusters-oldest clusters-down collection-link demo \
        test check sanity sanity-all sanity-first sanity-behind ansible-test-sanity ansible-lint docs-lint units integration integration-oldest \
        base-image ee ee-test bench build clean

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

venv: $(VENV_STAMP)
$(VENV_STAMP): requirements.txt tests/requirements-test.txt tests/requirements-dev.txt
	@[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q '$(CORE_SPEC)' -r $(VENV_REQUIREMENTS) $(KUBERNETES_SPEC)
	bash hack/seed-get-pip.sh $(VENV)/bin/python
	@touch $@

# Every line's venv (they install in parallel with the tool builds: make -j prepare).
venvs: $(addprefix venv-core,$(CORE_LINES))
venv-core%:
	@$(MAKE) --no-print-directory venv CORE=$*

tools: $(TOOLS_STAMP)
$(TOOLS_STAMP): hack/build-tools.sh
	K8S_VERSION=$(K8S_VERSION) bash hack/build-tools.sh
	@touch $@

# The oldest version's control plane and kubectl; KWOK, helm and sops come from TOOLS (on PATH after them).
tools-oldest: $(TOOLS_OLDEST)/.built
$(TOOLS_OLDEST)/.built: hack/build-tools.sh
	K8S_VERSION=$(K8S_OLDEST) bash hack/build-tools.sh kube-apiserver kube-controller-manager kube-scheduler kubectl
	@touch $@

base-image:
	@bash hack/base-image.sh >/dev/null

# Everything test needs installed, in parallel: the network-bound venvs and base
# image overlap the CPU-bound Go builds (make test orders the same steps by need).
prepare:
	$(MAKE) --no-print-directory -j4 tools tools-oldest venvs base-image

collection-link:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@[ "$$(readlink $(COLLECTION_LINK) || true)" = "$(CURDIR)" ] || ln -sfn $(CURDIR) $(COLLECTION_LINK)

clusters: venv tools
	$(VENV)/bin/python hack/clusters.py up $(CLUSTERS)

clusters-oldest: venv tools-oldest
	PHASEKIT_CLUSTERS_DIR=$(CLUSTERS_DIR_OLDEST) K8S_VERSION=$(K8S_OLDEST) PHASEKIT_BIN=$(TOOLS_OLDEST) \
	  $(VENV)/bin/python hack/clusters.py up $(CLUSTERS)

clusters-down: venv
	$(VENV)/bin/python hack/clusters.py down
	PHASEKIT_CLUSTERS_DIR=$(CLUSTERS_DIR_OLDEST) $(VENV)/bin/python hack/clusters.py down

DEMO_CLUSTERS ?= ephemeral target workload01
demo: venv tools collection-link
	$(VENV)/bin/python hack/clusters.py up $(DEMO_CLUSTERS)
	bash hack/demo.sh

# What CI runs (.ci/run): the full lines first, then the smoke lines on the same
# clusters, the Kubernetes-matrix tests on the oldest version, then the EE and a job
# in it. Each part's time is printed ([ci-time]) and collected in $(CI_TIMES).
# On a cold machine most of the time is Go builds, so nothing waits for what it does
# not need: the newest version's tools build beside the venvs and sanity (which need
# none); the oldest version's tools and the EE image build behind the tests at nice 19
# (hack/behind.sh), and only the parts that use them wait for them. A warm run skips them.
CI_TIMES ?= $(CACHE)/ci-times.txt
SUBMAKE = PHASEKIT_CI_TIMES=$(CI_TIMES) bash hack/timed.sh
BEHIND = PHASEKIT_BEHIND_DIR=$(CACHE)/ci-behind PHASEKIT_BEHIND_OWNER=$$PPID bash hack/behind.sh
test:
	@mkdir -p $(dir $(CI_TIMES)) && : >$(CI_TIMES) && date +%s >$(CI_TIMES).start
	$(SUBMAKE) "debian packages" bash hack/build-tools.sh --debian-packages
	@$(BEHIND) start tools $(SUBMAKE) "tools $(K8S_VERSION) (beside venvs, sanity)" \
	  $(MAKE) --no-print-directory tools
	@$(BEHIND) start --nice tools-oldest $(SUBMAKE) "tools $(K8S_OLDEST) (behind, nice 19)" \
	  $(MAKE) --no-print-directory tools-oldest
	@$(BEHIND) start --nice base-image $(SUBMAKE) "base-image (behind, nice 19)" $(MAKE) --no-print-directory base-image
	$(SUBMAKE) venvs $(MAKE) --no-print-directory -j3 venvs
	$(SUBMAKE) "sanity (all lines but $(SANITY_BEHIND))" $(MAKE) --no-print-directory -j2 sanity-first
	$(SUBMAKE) "wait: tools $(K8S_VERSION)" $(BEHIND) wait tools
	@$(BEHIND) start --nice ee $(SUBMAKE) "ee (behind, nice 19)" $(MAKE) --no-print-directory ee
	@$(BEHIND) start --nice sanity-behind $(SUBMAKE) "sanity $(SANITY_BEHIND) (behind, nice 19)" \
	  $(MAKE) --no-print-directory sanity-behind
	$(foreach line,$(CORE_FULL) $(filter-out $(CORE_FULL),$(CORE_LINES)),\
	  $(SUBMAKE) "tests $(line)" $(MAKE) --no-print-directory units integration CORE=$(line) &&) true
	$(SUBMAKE) "wait: tools $(K8S_OLDEST)" $(BEHIND) wait tools-oldest
	$(SUBMAKE) integration-oldest $(MAKE) --no-print-directory integration-oldest
	$(SUBMAKE) "wait: sanity $(SANITY_BEHIND)" $(BEHIND) wait sanity-behind
	$(SUBMAKE) "wait: ee" $(BEHIND) wait base-image ee
	$(SUBMAKE) ee-test $(MAKE) --no-print-directory ee-test
	@echo "[ci-time] make test: $$(( $$(date +%s) - $$(cat $(CI_TIMES).start) )) s (exit 0)" | tee -a $(CI_TIMES)
	@echo "=== time of each part"; cat $(CI_TIMES)

# Every line's sanity: ansible-test runs one test at a time, so two lines at once (make -j2) use both cores.
# In `make test` the lines in SANITY_BEHIND (the pre-release line) run behind the tests at nice 19 instead, in the
# CPU the integration tests leave idle while they wait on the clusters: a cold run stays under an hour.
SANITY_BEHIND ?= $(CORE_PRERELEASE)
sanity-all: $(addprefix sanity-core,$(CORE_LINES))
sanity-first: $(addprefix sanity-core,$(filter-out $(SANITY_BEHIND),$(CORE_LINES)))
sanity-behind: $(addprefix sanity-core,$(SANITY_BEHIND))
sanity-core%:
	@$(MAKE) --no-print-directory sanity CORE=$*

check: sanity units integration

sanity: ansible-test-sanity $(if $(filter yes,$(LINT)),ansible-lint) $(if $(filter full,$(LEVEL)),docs-lint)

# ansible-test wants the collection under ansible_collections/NAMESPACE/NAME:
# copy the files git knows (tracked and new, not ignored) into such a tree. It runs through
# hack/ansible-test-registry.py: its test environments' requirements from the package registry only.
SANITY_TREE := $(CACHE)/sanity-$(notdir $(CURDIR))-$(PYVER)-core$(CORE)/ansible_collections/phasekit/kube
ansible-test-sanity: venv
	rm -rf $(SANITY_TREE) && mkdir -p $(SANITY_TREE)
	git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
	  | tar --null -T - -cf - | tar -xf - -C $(SANITY_TREE)
	cd $(SANITY_TREE) && $(VENV)/bin/python $(CURDIR)/hack/ansible-test-registry.py sanity --color no --python $(PYVER) --requirements $(foreach d,hack bench,$(if $(wildcard $(d)),--exclude $(d)/))

ansible-lint: venv collection-link
	ansible-lint --nocolor

docs-lint: venv collection-link
	antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .

units: venv tools
	python -m pytest tests/unit -q -p no:cacheprovider -n $(UNIT_WORKERS) $(PYTEST_ARGS)

# The smoke lines run the smoke set; the first full line everything; the other full lines everything but the
# slowest files (marker first_full_line: CI's time). --durations: what each part of CI costs, in its log.
FIRST_FULL := $(firstword $(CORE_FULL))
INTEGRATION_MARKS := $(if $(filter smoke,$(LEVEL)),smoke and )$(if $(filter-out $(FIRST_FULL),$(CORE)),not first_full_line and )not ee
integration: venv tools collection-link clusters
	python -m pytest tests/integration -q -p no:cacheprovider -n $(INTEGRATION_WORKERS) --dist loadfile \
	  --durations=15 -m "$(INTEGRATION_MARKS)" $(PYTEST_ARGS)

# The tests marked k8s_matrix, against clusters of the oldest Kubernetes version,
# with that version's kubectl (its own directory and ports beside the newest's).
integration-oldest: venv tools-oldest collection-link clusters-oldest
	PHASEKIT_CLUSTERS_DIR=$(CLUSTERS_DIR_OLDEST) K8S_VERSION=$(K8S_OLDEST) PHASEKIT_BIN=$(TOOLS_OLDEST) \
	  PATH=$(TOOLS_OLDEST):$(PATH) \
	  python -m pytest tests/integration -q -p no:cacheprovider -n $(INTEGRATION_WORKERS) --dist loadfile -m "k8s_matrix and not first_full_line" $(PYTEST_ARGS)

# The execution environment: the repository's own definition (examples/ee), on
# the local Debian base (hack/base-image.sh) as a build override.
EE_IMAGE ?= phasekit-kube-ee:latest
ee: venv
	bash hack/build-ee.sh $(EE_IMAGE)

ee-test: venv tools collection-link clusters
	bash hack/base-image.sh --setup   # the host's /dev/mqueue, which ansible-navigator's podman containers need
	PHASEKIT_EE_IMAGE=$(EE_IMAGE) python -m pytest tests/integration -q -p no:cacheprovider -m ee $(PYTEST_ARGS)

bench: venv tools collection-link clusters ee
	python bench/run.py
	python bench/fleet.py
	python bench/fleet.py --only lock   # one run at a time: this tree against the tree before the lock
	python bench/fleet.py --only recap  # a result per cluster host (plan_host_results) against main's role
	python bench/fleet.py --only outputs  # an output costs no request when the apply answered with the object
	python bench/fleet.py --only preview  # a preview (--check) on empty clusters against the same plan's first run
	python bench/graph.py   # plans as graphs: the scheduler's own cost per (phase, cluster) pair
	python bench/graph_wall.py   # plans as graphs: wall time against the line and the critical path
	python bench/recap_ways.py          # the ways to give each host a PLAY RECAP line, and what each costs
	python bench/slices.py              # sliced runs: one barrier's cost through the coordination cluster
	python bench/sliced.py              # sliced runs: 2000 hosts x 10 phases as 1, 2 and 4 slices at once
	python bench/sliced.py --runner ee  # the same, each slice an AWX job: transmit | podman worker in the EE | process

build: venv
	ansible-galaxy collection build --force --output-path $(CACHE)/dist .

clean:
	rm -rf $(CACHE)/sanity-* $(CACHE)/dist tests/output

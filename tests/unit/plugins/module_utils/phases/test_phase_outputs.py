# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The views written for people outside the task's result: the Mermaid graph in a file, render's bundles as YAML (one
stream, or one file per phase and cluster), and where they may be written."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning import views
from ansible_collections.phasekit.kube.plugins.module_utils.running import report

GRAPH = ["flowchart TD", '  p0["a<br/>apply"]', '  p1["b<br/>apply"]', "  p0 --> p1"]
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"},
              "data": {"script": "echo one\necho two\n", "plain": "x"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "***"}}
BUNDLE = {"phase": "apps/web", "cluster": "target", "source": "../manifests/web", "objects": [CONFIG_MAP, SECRET]}
CHART = {"phase": "chart", "cluster": "target", "release": "hello", "namespace": "default", "chart": "/c/hello",
         "objects": [CONFIG_MAP]}
TEMPLATED = {"phase": "tpl", "cluster": "all", "source": "../t", "objects": [], "note": "has templates (.j2): ..."}
BUILDS = {"phase": "built", "cluster": "target", "command": ["ls", "-R"],
          "directories": {"BUILT": {"apps/components.yaml": "/m/apps"}}}


@pytest.mark.parametrize("path, expected", [
    ("plan.mmd", "\n".join(GRAPH) + "\n"),
    ("out/plan", "\n".join(GRAPH) + "\n"),
    ("plan.md", "```mermaid\n" + "\n".join(GRAPH) + "\n```\n"),
    ("PLAN.MD", "```mermaid\n" + "\n".join(GRAPH) + "\n```\n"),
], ids=["mmd-is-the-graph-alone", "any-other-name-too", "markdown-gets-a-mermaid-fence", "suffix-in-any-case"])
def test_graph_text(path, expected):
    assert views.graph_text(GRAPH, path) == expected


@pytest.mark.parametrize("entry, header", [
    (BUNDLE, ["# phase apps/web on cluster target", "# source: ../manifests/web"]),
    (CHART, ["# phase chart on cluster target", "# helm template of release hello (chart /c/hello), namespace default"]),
    (TEMPLATED, ["# phase tpl on cluster all", "# source: ../t", "# has templates (.j2): ...", "# (no objects)"]),
    (BUILDS, ["# phase built on cluster target", "# command: ls -R",
              "# builds $BUILT/apps/components.yaml from /m/apps when the phase runs", "# (no objects)"]),
], ids=["bundle-names-phase-cluster-source", "helm-names-release-chart-namespace", "note-said-no-objects",
        "env-dirs-named-as-built-later"])
def test_bundle_header(entry, header):
    assert views.bundle_header(entry) == header


@pytest.mark.parametrize("entries, documents", [
    ([BUNDLE], [CONFIG_MAP, SECRET]),
    ([BUNDLE, CHART], [CONFIG_MAP, SECRET, CONFIG_MAP]),
    ([TEMPLATED, BUILDS], []),
    ([TEMPLATED, BUNDLE], [CONFIG_MAP, SECRET]),
], ids=["objects-are-documents", "bundles-in-run-order", "no-objects-no-empty-document", "header-only-then-objects"])
def test_rendered_yaml_parses_as_the_objects(entries, documents):
    assert list(yaml.safe_load_all(views.rendered_yaml(entries))) == documents


def test_rendered_yaml_reads_as_kustomize_build_prints():
    """``---`` before each object, the header first, key order as written, text of several lines as a block."""
    text = views.bundle_yaml(BUNDLE)
    assert text.startswith("# phase apps/web on cluster target\n# source: ../manifests/web\n---\napiVersion: v1\n"
                           "kind: ConfigMap\nmetadata:\n"), text
    assert "  script: |\n    echo one\n    echo two\n" in text and text.count("\n---\n") == 2, text


@pytest.mark.parametrize("entry, name", [
    (BUNDLE, "apps/web/target.yaml"),
    ({"phase": "check#2", "cluster": "c 1"}, "check_2/c_1.yaml"),
    ({"phase": "../up", "cluster": ".."}, "_/up/_.yaml"),
], ids=["phase-path-then-cluster", "unsafe-characters-replaced", "no-climbing-out"])
def test_rendered_file_name(entry, name):
    assert views.rendered_file_name(entry) == name


def test_rendered_files_one_per_phase_and_cluster():
    twice = {**BUNDLE, "objects": [CONFIG_MAP]}
    files = views.rendered_files([BUNDLE, CHART, twice])
    assert list(files) == ["apps/web/target.yaml", "chart/target.yaml"]
    assert list(yaml.safe_load_all(files["apps/web/target.yaml"])) == [CONFIG_MAP, SECRET, CONFIG_MAP]


@pytest.mark.parametrize("dest, written", [
    ("out.yaml", ["out.yaml"]),
    ("out.yml", ["out.yml"]),
    ("rendered", ["rendered/apps/web/target.yaml", "rendered/chart/target.yaml"]),
], ids=["yaml-name-is-one-stream", "yml-too", "other-name-is-a-directory-of-files"])
def test_write_rendered(tmp_path, dest, written):
    paths = report.write_rendered(str(tmp_path / dest), [BUNDLE, CHART], "render_dest (plan_render_dest)")
    assert paths == [str(tmp_path / one) for one in written]
    found = [document for path in paths for document in yaml.safe_load_all((tmp_path / path).read_text())]
    assert found == [CONFIG_MAP, SECRET, CONFIG_MAP]
    assert not list(tmp_path.rglob(".*.tmp"))


@pytest.mark.parametrize("dest, message", [
    ("missing/out.yaml", "cannot write the rendered bundles {dest}: its directory {tmp}/missing does not exist"),
    ("missing/out", "cannot write the rendered bundles in {dest}: its parent directory {tmp}/missing does not "
                    "exist"),
    ("file", "cannot write the rendered bundles in {dest}: it is a file (expected a directory, or a file name "
             "ending in .yaml)"),
    ("dir.yaml", "cannot write the rendered bundles {dest}: it is a directory (expected a file path)"),
], ids=["yaml-file-directory-missing", "directory-parent-missing", "directory-is-a-file", "yaml-file-is-a-directory"])
def test_render_dest_refused(tmp_path, dest, message):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(PhasekitError) as raised:
        report.check_render_dest(str(tmp_path / dest), "render_dest (plan_render_dest)")
    assert str(raised.value).startswith("render_dest (plan_render_dest): ")
    assert message.format(dest=tmp_path / dest, tmp=tmp_path) in str(raised.value)


def test_write_graph(tmp_path):
    report.write_graph(str(tmp_path / "plan.md"), GRAPH, "graph_file (plan_graph_file)")
    assert (tmp_path / "plan.md").read_text() == views.graph_text(GRAPH, "plan.md")
    with pytest.raises(PhasekitError, match=r"^graph_file \(plan_graph_file\): cannot write the graph .*/no/plan.mmd: "
                                            r"its directory .*/no does not exist \(create it first\)$"):
        report.write_graph(str(tmp_path / "no" / "plan.mmd"), GRAPH, "graph_file (plan_graph_file)")

"""render_bundle: every bundle shape, in document order, with origins; bad input named precisely."""

from __future__ import annotations

import re
import shutil

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import has_templates, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def names(objects):
    return [o.name for o in objects]


@pytest.fixture()
def tree(tmp_path):
    (tmp_path / "one.yaml").write_text(CM.format(name="a") + "---\n" + CM.format(name="b"))
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "20-second.yml").write_text(CM.format(name="d"))
    (tmp_path / "dir" / "10-first.yaml").write_text("---\n---\n" + CM.format(name="c") + "---\n")
    (tmp_path / "dir" / "30-third.json").write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"}}')
    (tmp_path / "dir" / "README.md").write_text("not a manifest")
    (tmp_path / "dir" / "nested").mkdir()
    (tmp_path / "dir" / "nested" / "x.yaml").write_text(CM.format(name="ignored"))
    return tmp_path


@pytest.mark.parametrize("src, expected, first_origin", [
    ("one.yaml", ["a", "b"], "one.yaml document 1"),
    ("dir", ["c", "d", "e"], "dir/10-first.yaml document 2"),
], ids=["file-documents-in-order", "directory-sorted-not-recursive-empty-docs-skipped"])
def test_render_paths(tree, src, expected, first_origin):
    objects = render_bundle(src=src, base_dir=str(tree))
    assert names(objects) == expected
    assert objects[0].origin == first_origin


def test_absolute_src_ignores_base_dir(tree):
    assert names(render_bundle(src=str(tree / "one.yaml"), base_dir="/nonexistent")) == ["a", "b"]


@pytest.mark.parametrize("definition, expected, origin", [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, ["x"], "definition"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}}], ["x", "y"], "definition item 1"),
    (CM.format(name="x") + "---\n" + CM.format(name="y"), ["x", "y"], "definition document 1"),
    ({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}}]}, ["x", "y"], "definition item 1"),
], ids=["one-object", "list-of-objects", "yaml-string", "kind-list-expanded"])
def test_render_definition(definition, expected, origin):
    objects = render_bundle(definition=definition)
    assert names(objects) == expected
    assert objects[0].origin == origin


def test_timestamps_stay_strings_as_in_kubectl():
    objects = render_bundle(definition=CM.format(name="x") + "data:\n  when: 2024-01-02\n")
    assert objects[0].obj["data"]["when"] == "2024-01-02"


def test_kustomization_is_rendered(tmp_path):
    if not (shutil.which("kubectl") or shutil.which("kustomize")):
        raise AssertionError("kubectl or kustomize must be on PATH for this test")
    (tmp_path / "cm.yaml").write_text(CM.format(name="base"))
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml]\nnamePrefix: pre-\nnamespace: ns1\n")
    objects = render_bundle(src=str(tmp_path))
    assert names(objects) == ["pre-base"]
    assert objects[0].obj["metadata"]["namespace"] == "ns1"
    assert objects[0].origin.startswith("kustomization ")


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give exactly one of 'src'"),
    ({"src": "x", "definition": {}}, "give exactly one of 'src'"),
    ({"src": "missing.yaml"}, "bundle source 'missing.yaml' not found"),
    ({"definition": "a: 1\nb: [1\nc: 2\n"}, "definition line 3 column 2: invalid YAML"),
    ({"definition": ["just a string"]}, "definition item 1 document 1: expected a Kubernetes object"),
    ({"definition": {"kind": "ConfigMap", "metadata": {"name": "x"}}}, "definition: field 'apiVersion' is missing"),
    ({"definition": {"apiVersion": "v1", "kind": "ConfigMap"}}, "definition: field 'metadata' is missing"),
    ({"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}}},
     "field 'metadata.name' is missing"),
    ({"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": 3}}},
     "field 'metadata.namespace' must be a non-empty string"),
], ids=["neither", "both", "missing-path", "bad-yaml-line", "scalar-document", "no-apiversion", "no-metadata",
        "generate-name", "bad-namespace"])
def test_bad_input_is_named(tmp_path, kwargs, message):
    with pytest.raises(PhasekitError) as err:
        render_bundle(base_dir=str(tmp_path), **kwargs)
    assert message in str(err.value)


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(PhasekitError, match="has no manifest files"):
        render_bundle(src=str(tmp_path))


def test_failing_kustomization_names_the_directory(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    with pytest.raises(PhasekitError, match=r"kustomization .*: kubectl kustomize failed") as failed:
        render_bundle(src=str(tmp_path))
    # kustomize's whole chain of reasons, ending where it ends (a missing resource's message is 350 characters)
    assert str(failed.value).endswith("no such file or directory"), failed.value


def test_failing_kustomization_with_templates_names_the_users_directory(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml.j2, missing.yaml]\n")
    (tmp_path / "cm.yaml.j2").write_text(TEMPLATE)
    with pytest.raises(PhasekitError, match="kubectl kustomize failed") as failed:
        render_bundle(src=str(tmp_path), render_template=render_with({"name": "x"}))
    assert str(tmp_path / "missing.yaml") in str(failed.value) and "phasekit-kustomize-" not in str(failed.value)


@pytest.mark.parametrize("name, content, refused", [
    ("kustomisation.yaml", "resources: [cm.yaml]\n", True),
    ("Kustomization.yaml", "kind: Kustomization\nresources: [cm.yaml]\n", True),
    ("kustomization.yaml.j2", "resources: [cm.yaml]\n", True),
    ("customization.yaml", CM.format(name="custom"), False),
    ("kustomization.yml", "resources: [cm.yaml]\n", False),
], ids=["british-spelling", "capitalised", "template", "a-manifest-named-alike-is-read", "kustomize-reads-it"])
def test_a_kustomization_under_a_name_kustomize_does_not_read(tmp_path, name, content, refused):
    (tmp_path / "cm.yaml").write_text(CM.format(name="a"))
    (tmp_path / name).write_text(content)
    if not refused:
        assert "a" in names(render_bundle(src=str(tmp_path), render_template=render_with({"name": "x"})))
        return
    with pytest.raises(PhasekitError, match=f"holds '{re.escape(name)}', which kustomize does not read: did you mean "
                                            "kustomization.yaml"):
        render_bundle(src=str(tmp_path), render_template=render_with({"name": "x"}))


@pytest.mark.parametrize("metadata, expected", [
    ({"name": "a" * 100000}, "field 'metadata.name' is 100000 characters long; Kubernetes object names are at most 253"),
    ({"name": "x", "namespace": "n" * 64}, "field 'metadata.namespace' is 64 characters long"),
])
def test_overlong_names_are_refused_without_being_echoed(metadata, expected):
    with pytest.raises(PhasekitError) as caught:
        render_bundle(definition={"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
    assert expected in str(caught.value)
    assert "aaaaaaaaaa" not in str(caught.value) and "nnnnnnnnnn" not in str(caught.value)


def test_names_at_the_limits_are_accepted():
    objects = render_bundle(definition={"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "a" * 253, "namespace": "n" * 63}})
    assert len(objects) == 1


def test_rbac_names_may_be_longer():
    """RBAC names are path segments: the API server sets them no length limit, nor does the collection."""
    objects = render_bundle(definition={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                        "metadata": {"name": "r" * 300}})
    assert len(objects) == 1


def render_with(values: dict):
    """A stand-in for a host's template rendering: ``{{ key }}`` replaced by its value; records the paths."""
    rendered = []

    def render(path):
        rendered.append(path)
        text = open(path, encoding="utf-8").read()
        for key, value in values.items():
            text = text.replace("{{ " + key + " }}", value)
        return text

    render.paths = rendered
    return render


TEMPLATE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\n"


@pytest.mark.parametrize("layout, src", [
    ({"cm.yaml.j2": TEMPLATE}, "cm.yaml.j2"),
    ({"cm.yaml.j2": TEMPLATE, "plain.yaml": CM.format(name="plain"), "notes.txt": "x"}, "."),
], ids=["a-template-file", "templates-in-a-directory"])
def test_templates_render_with_the_hosts_values(tmp_path, layout, src):
    for name, text in layout.items():
        (tmp_path / name).write_text(text)
    render = render_with({"name": "from-host"})
    objects = render_bundle(src=str(tmp_path / src), render_template=render)
    assert "from-host" in names(objects)
    assert render.paths == [str(tmp_path / "cm.yaml.j2")]
    assert has_templates(str(tmp_path / src))
    assert objects[names(objects).index("from-host")].origin.endswith("cm.yaml.j2 document 1")


def test_a_kustomization_with_templates_and_a_base_outside_it(tmp_path):
    if not (shutil.which("kubectl") or shutil.which("kustomize")):
        raise AssertionError("kubectl or kustomize must be on PATH for this test")
    base, overlay = tmp_path / "base", tmp_path / "overlays" / "prod"
    base.mkdir()
    overlay.mkdir(parents=True)
    (base / "cm.yaml").write_text(CM.format(name="base"))
    (base / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (overlay / "extra.yaml.j2").write_text(TEMPLATE)
    (overlay / "kustomization.yaml").write_text("resources: [../../base, extra.yaml.j2]\nnamePrefix: p-\n")
    before = sorted(str(path) for path in tmp_path.rglob("*"))
    objects = render_bundle(src=str(overlay), render_template=render_with({"name": "tenant-a"}))
    assert names(objects) == ["p-base", "p-tenant-a"]
    assert sorted(str(path) for path in tmp_path.rglob("*")) == before     # nothing written beside the sources
    assert (overlay / "kustomization.yaml").read_text() == "resources: [../../base, extra.yaml.j2]\nnamePrefix: p-\n"


@pytest.mark.parametrize("layout, src, message", [
    ({"cm.yaml.j2": TEMPLATE}, "cm.yaml.j2", "cm.yaml.j2: a template (.j2): it is rendered with each cluster host's"),
    ({"cm.yaml.j2": TEMPLATE}, ".", "cm.yaml.j2: a template (.j2)"),
    ({"cm.yaml.j2": TEMPLATE, "kustomization.yaml": "resources: [cm.yaml.j2]\n"}, ".",
     "it has templates (.j2): they are rendered with each cluster host's variables"),
], ids=["file", "directory", "kustomization"])
def test_templates_are_not_rendered_without_a_host(tmp_path, layout, src, message):
    for name, text in layout.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(PhasekitError, match=re.escape(message)):
        render_bundle(src=str(tmp_path / src))


def test_plain_bundles_have_no_templates(tmp_path):
    (tmp_path / "cm.yaml").write_text(CM.format(name="x"))
    assert not has_templates(str(tmp_path)) and not has_templates(str(tmp_path / "cm.yaml"))

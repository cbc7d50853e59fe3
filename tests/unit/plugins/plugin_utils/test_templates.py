"""Templates rendered with a host's variables: errors that name file, line and variable; vault values found."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from vaulted import vaulted

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.masking import scrub_secrets
from ansible_collections.phasekit.kube.plugins.module_utils.templating import has_template_strings
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import (
    render_strings, render_template_file, render_template_text, vault_values)

VARIABLES = {"tenant": "acme", "size": 3}


@pytest.fixture
def templar():
    return Templar(loader=DataLoader())


def test_a_template_renders_with_the_variables(templar, tmp_path):
    path = tmp_path / "cm.yaml.j2"
    path.write_text("name: {{ tenant }}-settings\nreplicas: {{ size * 2 }}\n")
    assert render_template_file(templar, str(path), VARIABLES) == "name: acme-settings\nreplicas: 6\n"


@pytest.mark.parametrize("text, message", [
    ("a: 1\nb: {{ region }}\n", "f.yaml.j2 line 2: 'region' is undefined"),
    ("a: 1\n\nc: {{ tenant | nofilter }}\n", "f.yaml.j2 line 3: "),
    ("a: 1\n{% if %}\n", "f.yaml.j2 line 2: "),
], ids=["undefined-variable", "unknown-filter", "syntax-error"])
def test_errors_name_the_file_line_and_what_failed(templar, text, message):
    with pytest.raises(PhasekitError) as error:
        render_template_text(templar, text, VARIABLES, "f.yaml.j2")
    assert str(error.value).startswith(message)
    assert "acme" not in str(error.value)


def test_a_rendering_that_is_not_utf8_is_refused_naming_the_line_not_the_text(templar):
    variables = {**VARIABLES, "blob": "//79/A=="}  # base64 of bytes that are not UTF-8
    with pytest.raises(PhasekitError) as error:
        render_template_text(templar, "a: 1\nb: {{ blob | b64decode }}\n", variables, "f.yaml.j2")
    assert str(error.value) == ("f.yaml.j2: rendered line 2 is not UTF-8 text (a b64decode of a value that is not "
                                "base64-encoded text?)")


LINES_BEFORE = "a: 1\nb: 2\n{# a comment #}\nc: {{ tenant }}\n{% set doubled = size * 2 %}\nd: |\n"


@pytest.mark.parametrize("line_7", [
    "  {{ region }}",
    "  {{ tenant.missing.deeper }}",
    "  {% for item in [1] %}{{ item.nope }}{% endfor %}",
    "  {{ tenant | nofilter }}",
    "  {% if %}",
    "  {{ 'not json' | from_json }}",
    "  {{ 1 // 0 }}",
    "  {{ unset_variable | mandatory }}",
], ids=["undefined-variable", "undefined-attribute", "attribute-in-a-loop", "unknown-filter", "syntax-error",
        "filter-that-fails-with-a-json-error", "python-error", "mandatory-variable"])
def test_the_error_names_the_line_of_the_template_file(templar, tmp_path, line_7):
    """Line 7 of the .j2 file, whatever failed there: not the line of a JSON text a filter parsed, not none."""
    path = tmp_path / "cm.yaml.j2"
    path.write_text(LINES_BEFORE + line_7 + "\ne: 3\n")
    with pytest.raises(PhasekitError) as error:
        render_template_file(templar, str(path), VARIABLES)
    assert str(error.value).startswith(f"template {path} line 7: "), error.value
    assert "Traceback" not in str(error.value)


def test_only_strings_holding_templates_are_rendered(templar):
    options = {"namespace": "{{ tenant }}", "replicas": 2, "labels": ["{{ tenant }}-x", "plain {x}"]}
    assert has_template_strings(options) and not has_template_strings({"a": ["plain", 1]})
    assert render_strings(templar, options, VARIABLES, "options") == {
        "namespace": "acme", "replicas": 2, "labels": ["acme-x", "plain {x}"]}


def test_vault_values_are_found_and_scrubbed():
    found = vault_values({"db": {"password": vaulted("hunter2-xyz"), "user": "app"}, "list": [1, "x"]})
    assert found == {"hunter2-xyz"}     # its JSON-quoted form is the same text
    shown = scrub_secrets({"msg": "login app:hunter2-xyz failed", "n": 3}, found)
    assert shown == {"msg": "login app:*** failed", "n": 3}
    assert scrub_secrets("pin 123", {"123"}) == "pin 123"    # too short to be a secret worth blanking words for


def test_a_vault_value_is_also_hidden_as_json_quotes_it():
    found = vault_values([vaulted('pa"ss\\word')])
    assert found == {'pa"ss\\word'}
    assert scrub_secrets('{"after": "pa\\"ss\\\\word"}', found) == '{"after": "***"}'

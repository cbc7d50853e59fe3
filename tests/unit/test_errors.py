from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError


def test_error_message_names_where():
    assert str(PhasekitError("expected a mapping", where="site.yaml document 2 field spec")) == \
        "site.yaml document 2 field spec: expected a mapping"

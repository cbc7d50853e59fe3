# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""hack/split_phases.py: every form of reference to a module of phases/ is rewritten to its new package; a module
neither table names, a planning module importing a running one, or a reference left over fails before anything
changes; run twice, the second run does nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("split_phases", REPO / "hack" / "split_phases.py")
SPLIT = importlib.util.module_from_spec(SPEC)
sys.modules["split_phases"] = SPLIT
SPEC.loader.exec_module(SPLIT)

P = "ansible_collections.phasekit.kube.plugins.module_utils"


@pytest.mark.parametrize("relative, text, expected", [
    ("plugins/action/a.py", f"from {P}.phases.runner import plan_steps\n", f"from {P}.running.runner import plan_steps\n"),
    ("plugins/action/a.py", f"from {P}.phases.planner import (\n    Plan, PlannedPhase)\n",
     f"from {P}.planning.planner import (\n    Plan, PlannedPhase)\n"),
    ("plugins/action/a.py", f"from {P}.phases import report, views as v\n",
     f"from {P}.planning import views as v\nfrom {P}.running import report\n"),
    ("tests/unit/t.py", f"def f():\n    from {P}.phases import builtin\n", f"def f():\n    from {P}.running import builtin\n"),
    ("tests/unit/t.py", f'monkeypatch.setattr("{P}.phases.lock.time", x)\n', f'monkeypatch.setattr("{P}.running.lock.time", x)\n'),
    ("plugins/module_utils/phases/views.py", "from .runner import x\nfrom .model import y\n",
     "from ..running.runner import x\nfrom .model import y\n"),
    ("docs/a.md", "see `plugins/module_utils/phases/builtin.py`\n", "see `plugins/module_utils/running/builtin.py`\n"),
    ("docs/a.md", "(`phases/formats.py`: it claims)\n", "(`planning/formats.py`: it claims)\n"),
    ("tests/unit/t.py", '"phases.command", "kubeconfig.decode"\n', '"planning.command", "kubeconfig.decode"\n'),
    ("docs/a.md", "ansible-inventory -i phasekit-phases/inventory/site.yml\n", "ansible-inventory -i phasekit-phases/inventory/site.yml\n"),
    ("bench/fleet.py", '"plugins/module_utils/phases/lock.py"  # module_utils/phases/builtin.py\n',
     '"plugins/module_utils/phases/lock.py"  # module_utils/running/builtin.py\n'),
], ids=["absolute-import", "parenthesised-import", "from-the-package-one-statement-per-package", "import-inside-a-function",
        "mock-target-string", "relative-import-across-packages", "repository-path", "short-path", "short-dotted-name",
        "a-site-directory-named-phases-stays", "history-lookups-stay"])
def test_rewrite(relative, text, expected):
    assert SPLIT.rewrite_text(text, relative) == expected


def test_an_import_of_a_name_that_is_no_module_fails():
    with pytest.raises(SPLIT.SplitError, match="a.py:1: imports helper from the phases package"):
        SPLIT.rewrite_text(f"from {P}.phases import helper\n", "plugins/action/a.py")


def git_tree(root: Path, files: dict) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "hack").mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return root


PHASES = "plugins/module_utils/phases"
TREE = {
    f"{PHASES}/__init__.py": "",
    f"{PHASES}/model.py": "X = 1\n",
    f"{PHASES}/runner.py": f"from {P}.phases.model import X\n",
    "plugins/module_utils/__init__.py": "",
    "plugins/action/run.py": f"from {P}.phases import model, runner\n",
    "docs/architecture.md": "The runner (`module_utils/phases/runner.py`).\n",
}


def test_split_moves_rewrites_and_is_idempotent(tmp_path, capsys):
    root = git_tree(tmp_path, TREE)
    assert SPLIT.split(root) == 0
    assert not (root / PHASES).exists()
    assert (root / "plugins/module_utils/planning/__init__.py").read_text() == ""
    assert (root / "plugins/module_utils/running/runner.py").read_text() == f"from {P}.planning.model import X\n"
    assert (root / "plugins/action/run.py").read_text() == f"from {P}.planning import model\nfrom {P}.running import runner\n"
    assert (root / "docs/architecture.md").read_text() == "The runner (`module_utils/running/runner.py`).\n"
    first = capsys.readouterr().out
    assert f"moved {PHASES}/runner.py -> plugins/module_utils/running/runner.py" in first
    assert SPLIT.split(root) == 0
    assert capsys.readouterr().out == ("moved nothing: plugins/module_utils/phases/ is gone already\n"
                                       "rewrote nothing: no reference to phases/ is left\n")


@pytest.mark.parametrize("extra, message", [
    ({f"{PHASES}/newcomer.py": ""}, r"neither planning nor running: newcomer.py"),
    ({f"{PHASES}/planner.py": f"from {P}.phases.runner import Y\n"}, r"(?s)planning would import running.*planner.py:1"),
    ({"docs/more.md": "the package `plugins/module_utils/phases/`\n"}, r"(?s)cannot rewrite.*docs/more.md:1"),
], ids=["a-module-in-neither-table", "planning-importing-running", "a-reference-left-over"])
def test_split_fails_before_changing_anything(tmp_path, extra, message):
    root = git_tree(tmp_path, {**TREE, **extra})
    with pytest.raises(SPLIT.SplitError, match=message):
        SPLIT.split(root)
    assert (root / f"{PHASES}/runner.py").read_text() == TREE[f"{PHASES}/runner.py"]
    assert (root / "plugins/action/run.py").read_text() == TREE["plugins/action/run.py"]

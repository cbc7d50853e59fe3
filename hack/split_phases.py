#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Split ``plugins/module_utils/phases/`` into ``planning/`` and ``running/`` (issue #38, goal 1), with git mv, and
rewrite every reference to the old modules in plugins/, tests/, bench/, hack/, docs/ and README.md.

    python hack/split_phases.py [--root DIR] [--dry-run]

Planning is what reads documents into a checked, selected plan and shows it; running is what carries a plan out
on the clusters and records it. Planning is below running: no planning module imports a running one, which is
checked before anything moves (the split is decided by what imports what, and ``PLANNING`` holds every module a
planning module needs: the model takes ``rollout`` and ``outputs``, validation takes ``command``).

Rewritten: ``...module_utils.phases.X`` (imports, mock targets, docstrings), ``module_utils/phases/X.py`` paths,
the short forms ``phases.X`` and ``phases/X.py``, ``from ...module_utils.phases import a, b`` (one statement per
new package), and ``from .X import`` inside a moved module. Any reference left after that fails the run with its
file and line, as does a module of ``phases/`` named in neither table. Run again, it moves nothing and rewrites
nothing (it says so). The git paths bench/fleet.py looks up in history stay as they are (``HISTORICAL``).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

PREFIX = "ansible_collections.phasekit.kube.plugins.module_utils"
PLANNING = ("built_dirs", "command", "container", "documents", "executors", "formats", "graph", "inventory", "model",
            "outputs", "plan_changes", "planner", "problems", "rollout", "selection", "validation", "views")
RUNNING = ("builtin", "bundles", "fingerprint", "host_outputs", "host_records", "lock", "outcome", "record", "report",
           "runner", "schedule", "shared_cluster", "watching")
PACKAGE_OF = {**{name: "planning" for name in PLANNING}, **{name: "running" for name in RUNNING}}
REWRITTEN = ("plugins", "tests", "bench", "hack", "docs", "README.md")
SELF = ("hack/split_phases.py", "tests/unit/test_hack_split_phases.py")  # its cases are the old layout
# file -> old paths that name history (git log of a path), not the tree
HISTORICAL = {"bench/fleet.py": ("plugins/module_utils/phases/lock.py", "module_utils/phases/lock.py"),
              "tests/unit/test_hack_imports.py": ("module_utils/phases",)}  # its rules hold before and after the split
TEXT_SUFFIXES = (".py", ".md", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".toml", ".j2", ".sh")

NAMES = "|".join(sorted(PACKAGE_OF, key=len, reverse=True))
DOTTED = re.compile(rf"\bmodule_utils\.phases\.({NAMES})\b")
PATH = re.compile(rf"\bmodule_utils/phases/({NAMES})\b")
SHORT_DOTTED = re.compile(rf"(?<![\w./-])phases\.({NAMES})\b")
SHORT_PATH = re.compile(rf"(?<![\w./-])phases/({NAMES})\.py\b")
LEFT = re.compile(r"\bmodule_utils[./]phases\b|(?<![\w./-])phases[./](?:" + NAMES + r")\b")


class SplitError(Exception):
    pass


def phases_dir(root: Path) -> Path:
    return root / "plugins" / "module_utils" / "phases"


def check_assignment(root: Path) -> None:
    """Every module of phases/ has a package; none is in both."""
    present = sorted(path.stem for path in phases_dir(root).glob("*.py") if path.stem != "__init__")
    unknown = [name for name in present if name not in PACKAGE_OF]
    if unknown:
        raise SplitError("phases/ holds modules that are neither planning nor running: "
                         + ", ".join(f"{name}.py" for name in unknown) + " (add each to PLANNING or RUNNING in hack/split_phases.py)")
    if set(PLANNING) & set(RUNNING):
        raise SplitError(f"in both PLANNING and RUNNING: {sorted(set(PLANNING) & set(RUNNING))}")
    if (phases_dir(root) / "__init__.py").exists() and (phases_dir(root) / "__init__.py").read_text().strip():
        raise SplitError("plugins/module_utils/phases/__init__.py is not empty: move what it holds first")


def check_planning_below_running(root: Path) -> None:
    """No planning module imports a running one (at load time or inside a function)."""
    spec = importlib.util.spec_from_file_location("hack_imports", Path(__file__).with_name("imports.py"))
    imports = importlib.util.module_from_spec(spec)
    sys.modules["hack_imports"] = imports
    spec.loader.exec_module(imports)
    drawing = imports.read_tree(root)
    upward = [f"{drawing.modules[edge.source].relative_to(root)}:{edge.line} imports {edge.target}"
              for edge in drawing.edges
              if edge.source.startswith("module_utils.phases.") and edge.target.startswith("module_utils.phases.")
              and PACKAGE_OF.get(edge.source.split(".")[2]) == "planning" and PACKAGE_OF.get(edge.target.split(".")[2]) == "running"]
    if upward:
        raise SplitError("planning would import running (move the module, or the name it takes, down):\n  " + "\n  ".join(upward))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True)


def move(root: Path, dry_run: bool) -> list:
    """git mv every module of phases/ to its package; the old package goes."""
    moved = []
    source = phases_dir(root)
    if not source.exists():
        return moved
    for package in ("planning", "running"):
        init = root / "plugins" / "module_utils" / package / "__init__.py"
        if not init.exists() and not dry_run:
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text("")  # ansible-test: a module_utils package's __init__.py is empty
            git(root, "add", str(init.relative_to(root)))
    for path in sorted(source.glob("*.py")):
        if path.stem == "__init__":
            continue
        target = root / "plugins" / "module_utils" / PACKAGE_OF[path.stem] / path.name
        if target.exists():
            raise SplitError(f"{target.relative_to(root)} exists already: not overwriting it with {path.relative_to(root)}")
        moved.append((path.relative_to(root), target.relative_to(root)))
        if not dry_run:
            git(root, "mv", str(path.relative_to(root)), str(target.relative_to(root)))
    if not dry_run:
        if (source / "__init__.py").exists():
            git(root, "rm", "-q", "-f", str((source / "__init__.py").relative_to(root)))
        leftovers = [p for p in source.rglob("*") if "__pycache__" not in p.parts and p.is_file()]
        if leftovers:
            raise SplitError("phases/ still holds files the split does not know: " + ", ".join(map(str, leftovers)))
        for cache in sorted(source.rglob("__pycache__"), reverse=True):
            for file in cache.iterdir():
                file.unlink()
            cache.rmdir()
        if source.exists():
            source.rmdir()
    return moved


def split_from_imports(text: str, relative: str) -> str:
    """``from ...module_utils.phases import a, b as c`` -> one statement per new package."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise SplitError(f"{relative}:{error.lineno}: cannot parse it to rewrite its imports: {error.msg}") from error
    lines = text.splitlines(keepends=True)
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                  and (node.module == f"{PREFIX}.phases" or (node.level and node.module is None and relative.startswith("plugins/module_utils/phases/")))]
    for node in sorted(statements, key=lambda n: n.lineno, reverse=True):
        by_package = {}
        for alias in node.names:
            if alias.name not in PACKAGE_OF:
                raise SplitError(f"{relative}:{node.lineno}: imports {alias.name} from the phases package, "
                                 "which is no module of it: rewrite it by hand")
            by_package.setdefault(PACKAGE_OF[alias.name], []).append(
                alias.name + (f" as {alias.asname}" if alias.asname else ""))
        indent = " " * node.col_offset
        new = "".join(f"{indent}from {PREFIX}.{package} import {', '.join(names)}\n" for package, names in sorted(by_package.items()))
        ending = "\n" if lines[node.end_lineno - 1].endswith("\n") else ""  # a file without a final newline keeps none
        lines[node.lineno - 1:node.end_lineno] = [new[:-1] + ending]
    return "".join(lines)


def relative_imports(text: str, relative: str) -> str:
    """Inside a moved module, ``from .X import y`` stays if X moved beside it, else becomes ``from ..other.X``."""
    if not relative.startswith("plugins/module_utils/phases/"):
        return text
    own = PACKAGE_OF.get(Path(relative).stem)

    def rewrite(match):
        name = match.group(1)
        if name not in PACKAGE_OF:
            raise SplitError(f"{relative}: cannot rewrite the relative import of {name!r}")
        return match.group(0) if PACKAGE_OF[name] == own else f"from ..{PACKAGE_OF[name]}.{name} import"
    return re.sub(r"^\s*from \.(\w+) import", lambda m: m.group(0).replace(m.group(0).strip(), rewrite(m)), text, flags=re.MULTILINE)


def rewrite_text(text: str, relative: str) -> str:
    """The text of one file (at its place before the split) with every reference to phases/ rewritten."""
    if relative.endswith(".py"):
        text = split_from_imports(relative_imports(text, relative), relative)
    placeholders = {}
    for number, old in enumerate(HISTORICAL.get(relative, ())):
        placeholder = f"@@HISTORICAL{number}@@"
        placeholders[placeholder] = old
        text = text.replace(old, placeholder)
    text = DOTTED.sub(lambda m: f"module_utils.{PACKAGE_OF[m.group(1)]}.{m.group(1)}", text)
    text = PATH.sub(lambda m: f"module_utils/{PACKAGE_OF[m.group(1)]}/{m.group(1)}", text)
    text = SHORT_DOTTED.sub(lambda m: f"{PACKAGE_OF[m.group(1)]}.{m.group(1)}", text)
    text = SHORT_PATH.sub(lambda m: f"{PACKAGE_OF[m.group(1)]}/{m.group(1)}.py", text)
    for placeholder, old in placeholders.items():
        text = text.replace(placeholder, old)
    return text


def files_to_rewrite(root: Path) -> list:
    found = []
    for name in REWRITTEN:
        top = root / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*")) if top.exists() else []
        for path in candidates:
            relative = path.relative_to(root).as_posix()
            if path.is_file() and path.suffix in TEXT_SUFFIXES and relative not in SELF and "__pycache__" not in path.parts \
                    and not relative.startswith("tests/output/"):
                found.append(path)
    return found


def rewritten(root: Path) -> dict:
    """Every file that changes: its path before the split -> its new text. Nothing is written here."""
    changed = {}
    for path in files_to_rewrite(root):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        new = rewrite_text(text, relative)
        if new != text:
            changed[relative] = new
    return changed


def left_over(texts: dict) -> list:
    """References to the old package that the rewrite left, in texts by path."""
    found = []
    for relative, text in sorted(texts.items()):
        for number, line in enumerate(text.splitlines(), start=1):
            for old in HISTORICAL.get(relative, ()):
                line = line.replace(old, "")
            if LEFT.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def new_path(relative: str) -> str:
    old = Path(relative)
    if old.parent.as_posix() == "plugins/module_utils/phases" and old.stem in PACKAGE_OF:
        return f"plugins/module_utils/{PACKAGE_OF[old.stem]}/{old.name}"
    return relative


def split(root: Path, dry_run: bool = False) -> int:
    """Check, rewrite in memory, check what is left; only then move and write (a failure changes nothing)."""
    if phases_dir(root).exists():
        check_assignment(root)
        check_planning_below_running(root)
    changed = rewritten(root)
    every_text = {path.relative_to(root).as_posix(): changed.get(path.relative_to(root).as_posix())
                  or path.read_text(encoding="utf-8") for path in files_to_rewrite(root)}
    left = left_over(every_text)
    if left:
        raise SplitError("references to phases/ this script cannot rewrite (rewrite them by hand, or teach it), "
                         "nothing changed:\n  " + "\n  ".join(left))
    moved = move(root, dry_run)
    for old, new in moved:
        print(f"moved {old} -> {new}")
    if not moved:
        print("moved nothing: plugins/module_utils/phases/ is gone already")
    for relative, text in sorted(changed.items()):
        target = root / (relative if dry_run else new_path(relative))
        if not dry_run:
            target.write_text(text, encoding="utf-8")
        print(f"rewrote {target.relative_to(root)}")
    if not changed:
        print("rewrote nothing: no reference to phases/ is left")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout to split")
    parser.add_argument("--dry-run", action="store_true", help="print what would move and be rewritten; change nothing")
    args = parser.parse_args(argv)
    try:
        return split(args.root.resolve(), args.dry_run)
    except (SplitError, subprocess.CalledProcessError) as error:
        print(f"split_phases: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

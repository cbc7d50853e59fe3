#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The import drawing of ``plugins/``: rooms, floors, arrows, cycles, and line counts per room.

A room is a package of ``module_utils/`` (``module_utils/kube``), a loose module of it
(``module_utils/errors.py``), or a plugin directory (``action``, ``plugin_utils``, ``inventory``...). A room's
floor is one above the highest room it imports (0: it imports no other room). Floors, arrows and cycles count the
imports made when a module is loaded; an import inside a function (a registry loading its entries on first use,
a heavy client loaded only when needed) is a late arrow, listed on its own: it cannot make an import cycle, and
the registries the core exposes are filled that way from above (``module_utils/formats.py`` loading
``airship/``).

    python hack/imports.py                 # the drawing and the line counts, as text
    python hack/imports.py --mermaid       # the drawing as a Mermaid graph
    python hack/imports.py --root DIR      # another checkout (its plugins/ is read)

``tests/unit/test_hack_imports.py`` runs this on the tree and checks the layering ``docs/architecture.md``
declares ("must not").
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from collections import Counter, defaultdict
from pathlib import Path

PREFIX = "ansible_collections.phasekit.kube.plugins"


@dataclasses.dataclass(frozen=True)
class ImportEdge:
    """One module of ours importing another (or an outside top-level package, for ``outside``)."""
    source: str  # dotted name under plugins: module_utils.kube.apply
    target: str
    line: int
    in_function: bool


@dataclasses.dataclass(frozen=True)
class ModuleSize:
    module: str
    lines: int
    largest_function: tuple  # (lines, qualified name)
    largest_class: tuple


@dataclasses.dataclass
class Drawing:
    """Everything the tool reports on one tree."""
    modules: dict  # dotted name -> path
    edges: list  # ImportEdge between our modules
    outside: list  # ImportEdge to other top-level packages (ansible, kubernetes, yaml...)
    sizes: dict  # dotted name -> ModuleSize

    def room_of(self, module: str) -> str:
        return room_of(module, self.modules)

    def rooms(self) -> list:
        return sorted({self.room_of(module) for module in self.modules})

    def loaded(self) -> list:
        """The imports made when a module is loaded (not inside a function)."""
        return [edge for edge in self.edges if not edge.in_function]

    def room_arrows(self, late: bool = False) -> Counter:
        """(from room, to room) -> how many module imports go that way (late: the ones inside functions)."""
        arrows = Counter()
        for edge in self.edges:
            if edge.in_function != late:
                continue
            source, target = self.room_of(edge.source), self.room_of(edge.target)
            if source != target:
                arrows[(source, target)] += 1
        return arrows

    def module_cycles(self) -> list:
        return cycles({(edge.source, edge.target) for edge in self.loaded() if edge.source != edge.target})

    def room_cycles(self) -> list:
        return cycles(set(self.room_arrows()))

    def room_groups(self) -> list:
        """The groups of rooms that import each other, round about (each shares one floor)."""
        return [group for group in strongly_connected(self.rooms(), set(self.room_arrows())) if len(group) > 1]

    def floors(self) -> dict:
        """room -> floor; the rooms of a cycle share one floor."""
        arrows = set(self.room_arrows())
        components = strongly_connected(self.rooms(), arrows)
        component_of = {room: index for index, members in enumerate(components) for room in members}
        below = defaultdict(set)
        for source, target in arrows:
            if component_of[source] != component_of[target]:
                below[component_of[source]].add(component_of[target])
        floor_of_component = {}

        def floor(component: int) -> int:
            if component not in floor_of_component:
                floor_of_component[component] = 1 + max((floor(lower) for lower in below[component]), default=-1)
            return floor_of_component[component]
        return {room: floor(component_of[room]) for room in self.rooms()}

    def imports_of(self, room: str) -> list:
        """Every import made by a module of the room, ours and outside (target as written, dotted)."""
        return [edge for edge in self.edges + self.outside if self.room_of(edge.source) == room]


def module_name(path: Path, plugins: Path) -> str:
    parts = list(path.relative_to(plugins).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str, modules: dict) -> str:
    """module_utils.kube.apply -> module_utils/kube; module_utils.errors -> module_utils/errors.py; action.apply -> action."""
    parts = module.split(".")
    if parts[0] == "module_utils" and len(parts) >= 2:
        if len(parts) == 2 and not modules.get(module, Path("x")).name == "__init__.py":
            return f"module_utils/{parts[1]}.py"
        return f"module_utils/{parts[1]}"
    return parts[0]


def resolve(name: str, modules: dict) -> str | None:
    """The longest known module that a dotted name (module or module.attribute) names."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_names(node: ast.AST, module: str, is_package: bool) -> list:
    """Absolute dotted names an import statement names (for ``from x import y``: ``x.y`` and ``x``)."""
    if isinstance(node, ast.Import):
        return [[alias.name] for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join([PREFIX] + package + ([base] if base else []))
    return [[f"{base}.{alias.name}", base] for alias in node.names]


def function_sizes(tree: ast.AST, prefix: str = "") -> list:
    """(lines, qualified name, is class) of every function and class, nested ones too."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            found.append((node.end_lineno - node.lineno + 1, name, isinstance(node, ast.ClassDef)))
            found.extend(function_sizes(node, f"{name}."))
        else:
            found.extend(function_sizes(node, prefix))
    return found


def read_tree(root: Path) -> Drawing:
    """Parse every module of ``root/plugins``."""
    plugins = root / "plugins"
    modules = {module_name(path, plugins): path for path in sorted(plugins.rglob("*.py"))}
    edges, outside, sizes = [], [], {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        functions = {id(node) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        inside = {id(child) for node in ast.walk(tree) if id(node) in functions for child in ast.walk(node)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                continue
            for candidates in imported_names(node, module, path.name == "__init__.py"):
                name = candidates[0]
                if name.startswith(PREFIX + "."):
                    target = next((resolve(c[len(PREFIX) + 1:], modules) for c in candidates if resolve(c[len(PREFIX) + 1:], modules)), None)
                    if target is None:
                        raise SystemExit(f"{path}:{node.lineno}: imports {name}, which is not a module of plugins/")
                    edges.append(ImportEdge(module, target, node.lineno, id(node) in inside))
                else:
                    outside.append(ImportEdge(module, name, node.lineno, id(node) in inside))
        definitions = function_sizes(tree)
        sizes[module] = ModuleSize(
            module, len(path.read_text(encoding="utf-8").splitlines()),
            max(((lines, name) for lines, name, is_class in definitions if not is_class), default=(0, "")),
            max(((lines, name) for lines, name, is_class in definitions if is_class), default=(0, "")))
    return Drawing(modules, edges, outside, sizes)


def strongly_connected(nodes: list, arrows: set) -> list:
    """Tarjan's components, each a sorted list."""
    successors = defaultdict(list)
    for source, target in sorted(arrows):
        successors[source].append(target)
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in successors[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))
    for node in sorted(set(nodes) | {n for arrow in arrows for n in arrow}):
        if node not in index:
            visit(node)
    return components


def cycles(arrows: set) -> list:
    """One cycle (a path back to its start) per strongly connected group of two or more."""
    found = []
    successors = defaultdict(set)
    for source, target in arrows:
        successors[source].add(target)
    for component in strongly_connected([], arrows):
        if len(component) < 2:
            continue
        members, start = set(component), component[0]
        path, seen = [start], {start}
        while True:  # walk inside the group until a node repeats
            node = next(n for n in sorted(successors[path[-1]]) if n in members)
            if node in seen:
                found.append(path[path.index(node):] + [node])
                break
            path.append(node)
            seen.add(node)
    return found


def room_sizes(drawing: Drawing) -> list:
    """(room, files, lines, largest function, largest class) per room."""
    rows = []
    for room in drawing.rooms():
        members = [drawing.sizes[module] for module in drawing.modules if drawing.room_of(module) == room]
        function = max((size.largest_function + (size.module,) for size in members), default=(0, "", ""))
        klass = max((size.largest_class + (size.module,) for size in members), default=(0, "", ""))
        rows.append((room, len(members), sum(size.lines for size in members), function, klass))
    return rows


def text_report(drawing: Drawing) -> str:
    floors = drawing.floors()
    arrows = drawing.room_arrows()
    out = [f"{len(drawing.modules)} modules, {len(drawing.rooms())} rooms, {max(floors.values()) + 1} floors", ""]
    for floor in sorted(set(floors.values()), reverse=True):
        out.append(f"floor {floor}")
        for room in sorted(room for room in floors if floors[room] == floor):
            targets = ", ".join(f"{target} ({count})" for (source, target), count in sorted(arrows.items()) if source == room)
            out.append(f"  {room}" + (f" -> {targets}" if targets else ""))
    late = drawing.room_arrows(late=True)
    out.extend(["", "late arrows (imports inside functions)"])
    out.extend(f"  {source} -> {target} ({count})" for (source, target), count in sorted(late.items()))
    out.append("")
    module_cycles, room_cycles = drawing.module_cycles(), drawing.room_cycles()
    out.append("cycles between modules: " + ("none" if not module_cycles else ""))
    out.extend("  " + " -> ".join(cycle) for cycle in module_cycles)
    out.append("cycles between rooms: " + ("none" if not room_cycles else ""))
    for group, cycle in zip(drawing.room_groups(), room_cycles):
        out.append(f"  {', '.join(group)} (one floor), e.g. " + " -> ".join(cycle))
    out.extend(["", f"{'room':34} {'files':>5} {'lines':>6}  largest function / largest class"])
    for room, files, lines, function, klass in room_sizes(drawing):
        function_text = f"{function[1]} ({function[0]})" if function[0] else "-"
        class_text = f"{klass[1]} ({klass[0]})" if klass[0] else "-"
        out.append(f"{room:34} {files:5} {lines:6}  {function_text} / {class_text}")
    total = sum(size.lines for size in drawing.sizes.values())
    out.append(f"{'total':34} {len(drawing.modules):5} {total:6}")
    return "\n".join(out)


def mermaid_report(drawing: Drawing) -> str:
    floors = drawing.floors()

    def node(room):
        return room.replace("/", "_").replace(".", "_")
    out = ["graph TD"]
    for floor in sorted(set(floors.values()), reverse=True):
        out.append(f"  subgraph floor{floor}[floor {floor}]")
        out.extend(f"    {node(room)}[\"{room}\"]" for room in sorted(r for r in floors if floors[r] == floor))
        out.append("  end")
    out.extend(f"  {node(source)} -->|{count}| {node(target)}" for (source, target), count in sorted(drawing.room_arrows().items()))
    out.extend(f"  {node(source)} -.->|{count}| {node(target)}" for (source, target), count in sorted(drawing.room_arrows(late=True).items()))
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout whose plugins/ is read")
    parser.add_argument("--mermaid", action="store_true", help="print the rooms and arrows as a Mermaid graph")
    args = parser.parse_args(argv)
    drawing = read_tree(args.root)
    try:
        print(mermaid_report(drawing) if args.mermaid else text_report(drawing))
    except BrokenPipeError:  # piped into head
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Every relative link of the Markdown docs points at a file or directory of the repository.

Links in fenced code blocks and inline code are not links. URLs with a scheme
(``https:``, ``mailto:``) and pure anchors (``#section``) are not checked, and
anchors and queries are dropped from relative links. A link starting with ``/``
is relative to the repository root, as on GitHub.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKDOWN_DOCS = sorted(
    [REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "examples/site/README.md",
     REPO / "roles/plan/README.md"],
    key=str)

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<(?P<angled>[^>]*)>|(?P<plain>[^)\s]+))"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(?:<(?P<angled>[^>]*)>|(?P<plain>\S+))")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def link_targets(markdown: str) -> list[tuple[int, str]]:
    """(line, target) of every inline link, image and reference definition outside code."""
    targets, fence = [], None
    for number, line in enumerate(markdown.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            continue
        if fence is not None:
            if re.fullmatch(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", line):
                fence = None
            continue
        text = INLINE_CODE.sub("", line)
        for match in [*INLINE_LINK.finditer(text), *REFERENCE_DEFINITION.finditer(text)]:
            targets.append((number, match.group("angled") if match.group("angled") is not None
                            else match.group("plain")))
    return targets


def relative_path(target: str) -> str | None:
    """The file part of a relative link, or None for URLs, e-mail addresses and pure anchors."""
    if not target or target.startswith(("#", "//")) or SCHEME.match(target):
        return None
    path = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
    return path or None


def resolve(document: Path, path: str) -> Path:
    base = REPO if path.startswith("/") else document.parent
    return (base / path.lstrip("/")).resolve()


@pytest.mark.parametrize("markdown, expected", [
    ("See [the guide](docs/guide.md#setup).", [(1, "docs/guide.md#setup")]),
    ("![diagram](img/flow.png \"Flow\")", [(1, "img/flow.png")]),
    ("[a [nested] text](<with space.md>)", [(1, "with space.md")]),
    ("`[not](a-link.md)` but [yes](b.md)", [(1, "b.md")]),
    ("```\n[not](in-code.md)\n```\n[after](c.md)", [(4, "c.md")]),
    ("[ref]: ../LICENSE\n", [(1, "../LICENSE")]),
    ("[web](https://example.com) [top](#top)", [(1, "https://example.com"), (1, "#top")]),
], ids=["anchor", "image-title", "angled", "inline-code", "fenced-code", "reference", "url-and-anchor"])
def test_link_targets(markdown, expected):
    assert link_targets(markdown) == expected


@pytest.mark.parametrize("target, expected", [
    ("docs/a.md#x", "docs/a.md"),
    ("a%20b.md", "a b.md"),
    ("file.md?plain=1", "file.md"),
    ("#section", None),
    ("https://example.com/x.md", None),
    ("mailto:someone@example.com", None),
    ("//example.com/x", None),
], ids=["anchor", "escaped", "query", "pure-anchor", "url", "mailto", "protocol-relative"])
def test_relative_path(target, expected):
    assert relative_path(target) == expected


@pytest.mark.parametrize("document", MARKDOWN_DOCS, ids=[str(path.relative_to(REPO)) for path in MARKDOWN_DOCS])
def test_relative_links_point_at_existing_files(document):
    if not document.exists():
        pytest.fail(f"{document.relative_to(REPO)} does not exist")
    broken = []
    for line, target in link_targets(document.read_text(encoding="utf-8")):
        path = relative_path(target)
        if path is None:
            continue
        resolved = resolve(document, path)
        if not resolved.is_relative_to(REPO):
            broken.append(f"{document.relative_to(REPO)}:{line}: {target} leaves the repository")
        elif not resolved.exists():
            broken.append(f"{document.relative_to(REPO)}:{line}: {target} (no {resolved.relative_to(REPO)})")
    assert not broken, "broken relative links:\n" + "\n".join(broken)

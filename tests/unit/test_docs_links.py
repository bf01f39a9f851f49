"""Every relative link and image in the README and docs/ resolves.

Parses each ``*.md`` file of the repository root and of ``docs/`` (no Spark, no import of the
package) for inline links ``[text](target)`` and images ``![alt](target)`` outside code, and
checks that the target file exists. A link with an ``#anchor`` to a markdown file (or to the
page itself) must name one of the target's headings, slugged as GitHub does: lowercase,
punctuation dropped except ``-`` and ``_``, spaces turned into ``-``, and ``-1``, ``-2``, …
appended to repeated headings. Links to http(s) and mailto addresses are not checked.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) or ![alt](target), with an optional "title"; the text may hold one level of
# brackets. Inline code is blanked out before matching, so its text is empty then.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")


def markdown_files() -> list[Path]:
    return sorted([*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")])


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None:
            lines.append((number, line))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link and image outside code."""
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(text):
        for match in LINK.finditer(INLINE_CODE.sub("``", line)):
            found.append((number, match.group(1)))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading of a markdown file, repeated headings numbered."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def broken_links(path: Path) -> list[str]:
    """One line per link of ``path`` that does not resolve."""
    problems: list[str] = []
    for number, target in links(path.read_text(encoding="utf-8")):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}"
        if not target:
            problems.append(f"{where}: empty link target")
            continue
        if target.lower().startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            problems.append(f"{where}: {target} → {file_part} does not exist")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: {target} → no heading with anchor #{anchor}")
    return problems


def test_the_pages_exist() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert "README.md" in names
    assert len(names) > 1, "no pages under docs/"


@pytest.mark.parametrize(
    "path", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_every_relative_link_resolves(path: Path) -> None:
    problems = broken_links(path)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_readme_is_the_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Exit codes\n\n## Exit codes\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page: `one`, two (three)\n"
        "[ok](other.md#exit-codes) [ok](other.md#exit-codes-1) [ok](#page-one-two-three)\n"
        "[missing](nowhere.md) ![missing](images/none.png) [bad anchor](other.md#exit)\n"
        "[web](https://example.com/x) `[in code](nowhere.md)`\n"
        "```\n[in a fence](nowhere.md)\n# not a heading\n```\n",
        encoding="utf-8",
    )
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert any("nowhere.md does not exist" in problem for problem in problems)
    assert any("images/none.png does not exist" in problem for problem in problems)
    assert any("#exit" in problem for problem in problems)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("How the one scan works (and what it costs)", "how-the-one-scan-works-and-what-it-costs"),
        (
            "Monitoring over time: rollups, drift and alerts",
            "monitoring-over-time-rollups-drift-and-alerts",
        ),
        ("`calibration_metrics`", "calibration_metrics"),
        ("Keys, slice names and values", "keys-slice-names-and-values"),
    ],
)
def test_slug_is_githubs(heading: str, expected: str) -> None:
    assert slug(heading) == expected

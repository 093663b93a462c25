"""The repository's documents stand on their own: nothing tracked points at a document outside
the repository, every relative link in README.md and docs/ reaches a tracked file, and every
link to a section names a heading of that page.

A reader of a clone has only the clone. A path into a contracts directory the clone lacks, or
into a sibling checkout of internal notes, is a reference nobody outside can follow; the
contracts the bridge implements are written up in docs/ instead.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A relative path whose last directory is named contracts: that directory is looked up in the
# tracked tree. A path inside a URL (`//host/...`) is not relative, hence the look-behind. The
# name is spelt with a class, and built below, so that this file holds no such path itself.
_CONTRACTS_PATH = re.compile(
    r"(?<![\w./-])((?:\.{1,2}/|[\w.-]+/)*contract[s])/[\w.-]+(?:/[\w.-]+)*"
)
_CONTRACTS = "contract" + "s"
# Internal notes kept beside the repository, never inside it.
_OUTSIDE_NOTES = (
    re.compile(r"\.\./shared\b", re.IGNORECASE),
    re.compile(r"\bshared[/]", re.IGNORECASE),
    re.compile(r"\bsteering\s+doc", re.IGNORECASE),
)
# Markdown links and images: [text](target) with an optional "title".
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


@cache
def tracked_files() -> tuple[str, ...]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return tuple(
        name
        for name in listed.decode("utf-8").split("\0")
        if name and not name.startswith(".venv/") and (ROOT / name).is_file()
    )


@cache
def tracked_directories() -> frozenset[str]:
    directories = set()
    for name in tracked_files():
        parent = posixpath.dirname(name)
        while parent:
            directories.add(parent)
            parent = posixpath.dirname(parent)
    return frozenset(directories)


@cache
def tracked_paths() -> frozenset[str]:
    return frozenset(tracked_files()) | tracked_directories()


@cache
def text_of(name: str) -> str | None:
    """A tracked file's text, or None for a binary file."""
    data = (ROOT / name).read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _in_repository(path: str, directory: str) -> bool:
    """Whether `path`, as written in a file of `directory`, names a tracked directory: relative
    to that file or to the repository's root."""
    for base in (directory, ""):
        resolved = posixpath.normpath(posixpath.join(base, path))
        if resolved in tracked_directories():
            return True
    return False


def references_outside(name: str, text: str) -> list[str]:
    """Every `file:line: reference` of `text` (the file `name`) that points outside the repo."""
    found: list[tuple[int, str]] = []
    # A substring test before each pattern: the patterns cost ten times as much, and nearly
    # every file is ruled out by the substring alone.
    if _CONTRACTS + "/" in text:
        directory = posixpath.dirname(name)
        for match in _CONTRACTS_PATH.finditer(text):
            if not _in_repository(match.group(1), directory):
                found.append((match.start(), match.group(0)))
    lowered = text.lower()
    for pattern, word in zip(_OUTSIDE_NOTES, ("shared", "shared", "steering"), strict=True):
        if word in lowered:
            found.extend((match.start(), match.group(0)) for match in pattern.finditer(text))
    return [
        f"{name}:{text.count(chr(10), 0, start) + 1}: {' '.join(reference.split())}"
        for start, reference in sorted(found)
    ]


def broken_links(name: str, text: str) -> list[str]:
    """Every `file:line: target` of a relative Markdown link in `text` that reaches nothing."""
    found = []
    directory = posixpath.dirname(name)
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _LINK.finditer(line):
            target = match.group(1).split("#", 1)[0]
            if not target or _EXTERNAL.match(target):
                continue  # an anchor on the same page, or a URL
            resolved = posixpath.normpath(posixpath.join(directory, target))
            if resolved not in tracked_paths():
                found.append(f"{name}:{number}: {match.group(0)}")
    return found


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = "```"


def _outside_code(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a Markdown text that are not inside a fenced code block."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(_FENCE):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


@cache
def anchors_of(name: str) -> frozenset[str]:
    """The anchors of a Markdown page's headings, as GitHub makes them: lower case, every
    character but letters, digits, `_`, `-` and spaces dropped, spaces as `-`, and `-1`, `-2`
    after a repeated one."""
    seen: Counter[str] = Counter()
    anchors = set()
    for _, line in _outside_code(text_of(name) or ""):
        if match := _HEADING.match(line):
            anchor = re.sub(r"[^\w\- ]", "", match.group(2).strip().lower()).replace(" ", "-")
            anchors.add(f"{anchor}-{seen[anchor]}" if seen[anchor] else anchor)
            seen[anchor] += 1
    return frozenset(anchors)


def broken_anchors(name: str, text: str) -> list[str]:
    """Every `file:line: target` of a link to a section of a tracked page that has no such
    heading (`page.md#section`, or `#section` on the same page)."""
    found = []
    for number, line in _outside_code(text):
        for match in _LINK.finditer(line):
            target, hash_sign, anchor = match.group(1).partition("#")
            if not hash_sign or _EXTERNAL.match(target):
                continue
            # `#section` alone is a section of this page.
            page = (
                posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
                if target
                else name
            )
            if page.endswith(".md") and page in tracked_files() and anchor not in anchors_of(page):
                found.append(f"{name}:{number}: {match.group(0)}")
    return found


def test_no_tracked_file_points_at_documents_outside_the_repository() -> None:
    found = [
        reference
        for name in tracked_files()
        if (text := text_of(name)) is not None
        for reference in references_outside(name, text)
    ]
    assert not found, (
        "these lines point at documents that are not in the repository; point them at the "
        "repository's own docs (docs/fetcher-job-events.md, docs/forwarded-message.md, "
        "docs/outcome.md) instead:\n" + "\n".join(found)
    )


def test_every_relative_link_in_the_docs_reaches_a_tracked_file() -> None:
    pages = [name for name in tracked_files() if name == "README.md" or _is_doc_page(name)]
    found = [link for name in pages for link in broken_links(name, text_of(name) or "")]
    assert not found, "these links reach no tracked file:\n" + "\n".join(found)


def test_every_link_to_a_section_names_a_heading_of_its_page() -> None:
    pages = [name for name in tracked_files() if name == "README.md" or _is_doc_page(name)]
    found = [link for name in pages for link in broken_anchors(name, text_of(name) or "")]
    assert not found, (
        "these links name a section their page does not have (a heading renamed?):\n"
        + "\n".join(found)
    )


def _is_doc_page(name: str) -> bool:
    return name.startswith("docs/") and name.endswith(".md")


def test_the_readme_lists_the_producers_wire_format() -> None:
    assert "docs/fetcher-job-events.md" in tracked_files()
    readme = text_of("README.md") or ""
    assert "| [docs/fetcher-job-events.md](docs/fetcher-job-events.md) |" in readme


# The checks themselves: each would let a reference through if its pattern broke.


def test_a_path_into_a_missing_contracts_directory_is_found() -> None:
    text = f"see {_CONTRACTS}/outcome.md and ../{_CONTRACTS}/forwarded-message.md\n"
    found = references_outside("layers/jobhooks/x.py", text)
    assert [reference.split(":")[:2] for reference in found] == [
        ["layers/jobhooks/x.py", "1"],
        ["layers/jobhooks/x.py", "1"],
    ]


def test_a_url_or_a_tracked_directory_named_contracts_is_not_a_reference() -> None:
    text = f"https://example.com/{_CONTRACTS}/outcome.md, docs/outcome.md\n"
    assert references_outside("README.md", text) == []


def test_internal_notes_beside_the_repository_are_found_even_across_a_line_break() -> None:
    shared = "shar" + "ed"
    text = f"copied from {shared}/vectors\nsee ../{shared}\nthe steering\ndocument says\n"
    lines = [reference.split(":")[1] for reference in references_outside("a.md", text)]
    assert lines == ["1", "2", "3"]


def test_a_link_to_a_missing_page_is_found_and_urls_and_anchors_are_not() -> None:
    text = (
        "[ok](ingest.md#rejections) [gone](fetcher-job-event.md) [web](https://example.com/x.md)"
        " [here](#top) [up](../README.md)\n"
    )
    assert broken_links("docs/x.md", text) == ["docs/x.md:1: [gone](fetcher-job-event.md)"]


def test_a_link_to_a_missing_section_is_found_and_headings_make_github_s_anchors() -> None:
    assert {"rejections", "unsigned-headers", "the-claim"} <= anchors_of("docs/ingest.md")
    # Punctuation and code marks dropped, underscores kept: the local AWS limits' heading.
    assert "aws-limits-the-emulator-does-not-enforce-jobhooks_toolslocalaws_limits" in (
        anchors_of("docs/architecture.md")
    )
    text = (
        "[ok](ingest.md#rejections) [gone](ingest.md#rejection) [web](https://x.org/a.md#b)"
        " [self](#no-such-section)\n```\n[in code](ingest.md#nothing)\n```\n"
    )
    assert broken_anchors("docs/ingest.md", text) == [
        "docs/ingest.md:1: [gone](ingest.md#rejection)",
        "docs/ingest.md:1: [self](#no-such-section)",
    ]

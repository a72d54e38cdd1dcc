#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown pages.

Every relative link in README.md, docs/*.md and benches/results/*/README.md must point at a
file or directory of the repository, and where it names an anchor (`page.md#heading`, or
`#heading` within the page) at a heading of that Markdown page, using GitHub's anchor rules
(lower case, punctuation dropped, spaces as hyphens, `-1`, `-2`, ... for repeated headings).
Links with a scheme (https:, mailto:, ...) are not checked. Links inside code spans and fenced
code blocks are not links and are ignored.

Usage: scripts/check-links.py [FILE.md ...]   (default: the pages above)
Exit status 0 when every link resolves, 1 with one line per broken link otherwise.
Python 3 standard library only.
"""

import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CLOSE_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target), with an optional "title"; text may hold one level of [].
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_HREF = re.compile(r"<a\s[^>]*href=\"([^\"]*)\"", re.IGNORECASE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def default_pages():
    pages = [ROOT / "README.md"]
    pages += sorted((ROOT / "docs").glob("*.md"))
    pages += sorted((ROOT / "benches" / "results").glob("*/README.md"))
    return [p for p in pages if p.is_file()]


def lines_outside_fences(text):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        else:
            close = CLOSE_FENCE.match(line)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                fence = None


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)  # emphasis markers (underscores inside words stay)
    text = text.strip().lower()
    out = []
    for ch in text:
        if ch == " ":
            out.append("-")
        elif ch in "-_" or unicodedata.category(ch)[0] in "LN" or unicodedata.category(ch) == "Mn":
            out.append(ch)
    return "".join(out)


_anchor_cache = {}


def anchors(path):
    """The heading anchors of a Markdown file."""
    if path not in _anchor_cache:
        seen = {}
        found = set()
        text = path.read_text(encoding="utf-8")
        for _, line in lines_outside_fences(text):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
        # Explicit anchors: <a id="..."> or <a name="...">.
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
        _anchor_cache[path] = found
    return _anchor_cache[path]


def links(path):
    """(line number, target) for every link of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    for number, line in lines_outside_fences(text):
        m = REFERENCE_DEF.match(line)
        if m:
            yield number, m.group(1)
            continue
        bare = CODE_SPAN.sub("", line)
        for m in INLINE_LINK.finditer(bare):
            yield number, m.group(1)
        for m in HTML_HREF.finditer(bare):
            yield number, m.group(1)


def check(page):
    """Broken links of one page, as messages."""
    broken = []
    rel = page.relative_to(ROOT)
    for number, target in links(page):
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        file_part = unquote(file_part)
        if file_part.startswith("/"):
            broken.append(f"{rel}:{number}: {target}: absolute path (use a relative link)")
            continue
        dest = (page.parent / file_part).resolve() if file_part else page
        try:
            dest.relative_to(ROOT)
        except ValueError:
            broken.append(f"{rel}:{number}: {target}: points outside the repository")
            continue
        if not dest.exists():
            broken.append(f"{rel}:{number}: {target}: no such file")
            continue
        if anchor and dest.is_file() and dest.suffix.lower() == ".md":
            if unquote(anchor).lower() not in anchors(dest):
                broken.append(f"{rel}:{number}: {target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    return broken


def main(argv):
    pages = [Path(a).resolve() for a in argv[1:]] or default_pages()
    broken = []
    count = 0
    for page in pages:
        count += sum(1 for _ in links(page))
        broken += check(page)
    for b in broken:
        print(b)
    sys.stdout.flush()
    if broken:
        print(f"{len(broken)} broken link(s) in {len(pages)} page(s)", file=sys.stderr)
        return 1
    print(f"ok: {count} link(s) in {len(pages)} page(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The shared markdown-it parser, extended with two token types the graph needs.

* ``front_matter``: a YAML block fenced by ``---`` lines at the very top of the file.
  ``token.content`` is the YAML, ``token.map`` covers the fences. An opening fence that is never
  closed is left to CommonMark (a thematic break) and flagged in ``env["front_matter_unclosed"]``.
* ``wikilink``: ``[[target]]``, ``[[target#anchor]]`` or ``[[target|label]]``; ``token.content``
  is the text between the brackets.

Two changes make parsing cheaper, since nothing is rendered. Inline content is tokenised only
where the graph needs inline tokens: headings (their plain text gives the slug) and blocks
containing ``[`` (every link and wiki link needs one); elsewhere ``children`` stays empty and
callers use ``token.content``. Link destinations are not percent-encoded, so they keep the
author's spelling.

Building a MarkdownIt instance compiles its rule chains, so one instance is shared: ``parse``
keeps all per-call state in the returned tokens and ``env``, which makes reuse safe.
"""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline

FRONT_MATTER = "front_matter"
WIKILINK = "wikilink"
UNCLOSED_FLAG = "front_matter_unclosed"


class _GraphMarkdownIt(MarkdownIt):
    def normalizeLink(self, url: str) -> str:
        return url


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    md = _GraphMarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.block.ruler.before("table", FRONT_MATTER, _front_matter)
    md.inline.ruler.before("link", WIKILINK, _wikilink)
    md.core.ruler.at("inline", _inline_where_needed)
    return md


def _inline_where_needed(state: StateCore) -> None:
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "inline":
            continue
        token.children = []
        if "[" in token.content or (index and tokens[index - 1].type == "heading_open"):
            state.md.inline.parse(token.content, state.md, state.env, token.children)


def _line(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _front_matter(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    # Only the first line of the file itself: inside a blockquote or list the line marks are
    # shifted past the container markers, so bMarks + tShift is no longer 0.
    if start_line != 0 or state.bMarks[0] + state.tShift[0] != 0:
        return False
    if _line(state, 0).rstrip() != "---":
        return False
    close = next(
        (
            line
            for line in range(1, end_line)
            if state.tShift[line] == 0 and _line(state, line).rstrip() in ("---", "...")
        ),
        None,
    )
    if close is None:
        state.env[UNCLOSED_FLAG] = True
        return False
    if silent:
        return True
    token = state.push(FRONT_MATTER, "", 0)
    token.block = True
    token.hidden = True
    token.markup = "---"
    token.map = [0, close + 1]
    token.content = state.src[state.bMarks[1] : state.bMarks[close]] if close > 1 else ""
    state.line = close + 1
    return True


def _wikilink(state: StateInline, silent: bool) -> bool:
    start = state.pos
    if not state.src.startswith("[[", start):
        return False
    end = state.src.find("]]", start + 2, state.posMax)
    if end < 0:
        return False
    inner = state.src[start + 2 : end]
    if not inner.strip() or "\n" in inner or "[" in inner or "]" in inner:
        return False
    if not silent:
        token = state.push(WIKILINK, "", 0)
        token.content = inner
    state.pos = end + 2
    return True

"""Project rules as directives (issue 20).

Rule files (``AGENTS.md``, ``CLAUDE.md``, ``.cursor/rules/*.mdc``,
``.github/copilot-instructions.md``, ``docs/rules/*.md`` and any Markdown the schema map types
as ``Rule``) become ``Directive`` nodes, one per rule statement, with a strength
(MUST/SHOULD/MAY) and a scope. :mod:`kg.directives.detect` turns a task into its context
(layer, topics, technologies), :mod:`kg.directives.score` ranks the directives that apply and
:mod:`kg.rules.service` serves them within a token budget and logs what was served.

Parsing (``parse``, ``strength``, ``globs``, ``nodes``) touches no database, so the ingest
parser (and its worker processes) import only that half.
"""

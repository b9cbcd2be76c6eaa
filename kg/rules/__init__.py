"""The rules service behind ``kg rules detect|query`` and the MCP tools ``detect_context`` and
``query_directives``: a task's context detected from the project's files, the directives
that apply ranked and served within a token budget, and what was served logged.

It reads the project's schema map and paths (:mod:`kg.ingest`) and the directives'
model, scoring and catalogue (:mod:`kg.directives`, which ingestion parses rule files with).
"""

"""Source code as context: files, classes, functions and methods parsed with tree-sitter,
their calls, imports and bases resolved across the repository, linked to the specs.

The stages mirror the Markdown ingest and reuse its diff and append machinery:
:mod:`~kg.languages` says which files are source and which are skipped,
:mod:`~kg.ingest.code.extract` parses one file into plain data (no database),
:mod:`~kg.ingest.code.resolve` turns the references of many files into edges against a symbol
index of the whole repository, and :mod:`~kg.ingest.code.stage` runs that inside an ingest.
"""

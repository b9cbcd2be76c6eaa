"""Entities beyond headings: endpoints, events, terms and concepts named in the prose.

Declared in the schema map (:mod:`kg.ingest.entities.config`), found by
:mod:`kg.ingest.entities.extract` while a file is parsed, and kept as shared nodes (one per
normalised name, like requirement ids) whose relationship edges are owned jointly by the files
that state them (:mod:`kg.ingest.entities.relations`).
"""

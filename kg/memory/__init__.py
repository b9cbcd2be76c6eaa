"""The reference MCP memory server's model (entities with observations, relations between
them) kept in the knowledge graph: written as events, read through the policies.

:mod:`kg.memory.write` appends (each write acknowledged with its log position, concurrent
writers never losing each other's changes), :mod:`kg.memory.read` reads within a token budget,
:mod:`kg.memory.importer` brings in an existing ``memory.jsonl``.
"""

"""Condition words: the crude stemming that lets a task's words meet a rule's condition."""

from __future__ import annotations

from kg.directives.words import words


def test_a_verb_and_its_ing_form_are_one_word_and_so_are_a_noun_and_its_plural() -> None:
    assert words("handle the input and validate it") == words("handling input, validating")
    assert words("a rule file") == words("rules files")
    assert words("queries") == words("query")

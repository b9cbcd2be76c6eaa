"""Policies keep selecting requirements after ids were scoped to the defining document
(``requirement:FR-13`` became ``requirement:docs/prd.md#FR-13``): a selector naming the
project-wide id picks the requirement whichever document defines it, and a path selector picks
the requirements its files define."""

from __future__ import annotations

from kg.events.policy import PolicyRule
from kg.policies.model import Policy, node_path


def test_a_requirement_id_selector_picks_every_definition_of_that_id() -> None:
    policy = Policy(
        "policy:p", "p", PolicyRule(effect="deny", node_ids=("requirement:FR-13",)), "w"
    )
    assert policy.selects("Requirement", (), "requirement:docs/prd.md#FR-13")
    assert policy.selects("Requirement", (), "requirement:specs/003-x/spec.md#FR-13")
    assert policy.selects("Requirement", (), "requirement:FR-13")  # the project-wide one
    assert not policy.selects("Requirement", (), "requirement:docs/prd.md#FR-130")
    assert not policy.selects("Requirement", (), "requirement:docs/prd.md#NFR-13")


def test_a_path_selector_picks_the_requirements_its_files_define() -> None:
    assert node_path("requirement:specs/003-x/spec.md#FR-1") == "specs/003-x/spec.md"
    assert node_path("requirement:FR-1") is None
    policy = Policy("policy:p", "p", PolicyRule(effect="deny", paths=("specs/secret/**",)), "w")
    assert policy.selects("Requirement", (), "requirement:specs/secret/spec.md#FR-1")
    assert not policy.selects("Requirement", (), "requirement:specs/open/spec.md#FR-1")

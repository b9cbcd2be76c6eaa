"""``org.db``: decisions, error_solutions, skill_learnings (ADR-151).

Decisions become ``DecisionRecorded``, the event ``record_decision`` writes live, so lineage and
the audit trail treat them like any other decision; error solutions and skill learnings become
``ErrorSolution`` and ``SkillLearning`` nodes.
"""

from __future__ import annotations

from typing import ClassVar

from backfill.rows import Field, MapContext, Mapped, Row, TableSpec, actor_of, compact, id_part
from backfill.values import confidence, integer
from kg.events import DecisionRecorded, NodeAsserted, build_event

_ID = Field(("id",))
_SESSION = Field(("session_id", "session"))
_CREATED = Field(("created_at", "timestamp", "created", "recorded_at"))
_ACTOR = Field(("agent", "author", "created_by", "actor", "user"))
_CONFIDENCE = Field(("confidence", "confidence_score", "score"))
_LABELS = ("legacy",)


def _name(value: str) -> str:
    return " ".join(value.split())[:200]


class Decisions(TableSpec):
    name = "decisions"
    key = "id"
    fields: ClassVar[dict[str, Field]] = {
        "id": _ID,
        "text": Field(("decision", "decision_text", "text", "title"), required=True),
        "decision_type": Field(("decision_type", "type", "category")),
        "confidence": _CONFIDENCE,
        "rationale": Field(("rationale", "reason", "reasoning")),
        "session_id": _SESSION,
        "created_at": _CREATED,
        "actor": _ACTOR,
    }

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        event = build_event(
            DecisionRecorded,
            decision_id=f"{ctx.prefix}-{id_part(row)}",
            text=row.required("text"),
            rationale=row.text("rationale") or "",
            decision_type=(row.text("decision_type") or "general").strip(),
            confidence=confidence(row.get("confidence"), row.col("confidence"), row.warnings),
        )
        return Mapped([event], actor_of(row), row.text("session_id"))


class ErrorSolutions(TableSpec):
    name = "error_solutions"
    keeps_extra = True
    key = "id"
    fields: ClassVar[dict[str, Field]] = {
        "id": _ID,
        "error": Field(
            ("error_pattern", "error", "error_message", "error_signature"), required=True
        ),
        "solution": Field(("solution", "fix", "resolution"), required=True),
        "error_type": Field(("error_type", "category", "type")),
        "language": Field(("language", "lang")),
        "success_count": Field(("success_count", "successes")),
        "failure_count": Field(("failure_count", "failures")),
        "confidence": _CONFIDENCE,
        "session_id": _SESSION,
        "created_at": _CREATED,
        "actor": _ACTOR,
    }

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        error, solution, w = row.required("error"), row.required("solution"), row.warnings
        properties = compact(
            {
                "error_type": row.text("error_type"),
                "language": row.text("language"),
                "success_count": integer(row.get("success_count"), row.col("success_count"), w),
                "failure_count": integer(row.get("failure_count"), row.col("failure_count"), w),
                "confidence": confidence(row.get("confidence"), row.col("confidence"), w),
                "legacy_created_at": row.text("created_at"),
                "legacy": row.legacy_properties(),
            }
        )
        event = build_event(
            NodeAsserted,
            node_id=f"error_solution:{ctx.prefix}-{id_part(row)}",
            node_type="ErrorSolution",
            name=_name(error),
            content=f"Error: {error}\n\nSolution: {solution}",
            properties=properties,
            labels=_LABELS,
        )
        return Mapped([event], actor_of(row), row.text("session_id"))


class SkillLearnings(TableSpec):
    name = "skill_learnings"
    keeps_extra = True
    key = "id"
    fields: ClassVar[dict[str, Field]] = {
        "id": _ID,
        "skill": Field(("skill_name", "skill", "name")),
        "learning": Field(("learning", "lesson", "content", "description"), required=True),
        "category": Field(("category", "learning_type", "type")),
        "confidence": _CONFIDENCE,
        "session_id": _SESSION,
        "created_at": _CREATED,
        "actor": _ACTOR,
    }

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        learning, skill = row.required("learning"), row.text("skill")
        properties = compact(
            {
                "skill": skill,
                "category": row.text("category"),
                "confidence": confidence(
                    row.get("confidence"), row.col("confidence"), row.warnings
                ),
                "legacy_created_at": row.text("created_at"),
                "legacy": row.legacy_properties(),
            }
        )
        event = build_event(
            NodeAsserted,
            node_id=f"skill_learning:{ctx.prefix}-{id_part(row)}",
            node_type="SkillLearning",
            name=_name(f"{skill}: {learning}" if skill else learning),
            content=learning,
            properties=properties,
            labels=_LABELS,
        )
        return Mapped([event], actor_of(row), row.text("session_id"))

"""How a node reached by a hop is scored: hop decay, edge weight, recency, task overlap."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

HOP_DECAY = 0.5
RECENCY_DAYS = 30.0
# With a task, a hop's score also says how many of the task's terms the node shares (in its
# name and first OVERLAP_CHARS of content): from 1 - TASK_WEIGHT (none) to 1 (all).
TASK_WEIGHT = 0.75
OVERLAP_CHARS = 3000


def weight_factor(weight: float) -> float:
    """1.0 for the default weight 1, less for weaker edges, at most 2 for strong ones."""
    return 2.0 * weight / (weight + 1.0)


def recency_factor(updated_at: datetime, as_of: datetime | None) -> float:
    """Between 0.8 (old) and 1.0 (changed at the as-of time). Relative to the as-of event's time,
    never the wall clock, so a reproduction scores exactly the same."""
    if as_of is None:
        return 1.0
    age_days = max(0.0, (as_of - updated_at).total_seconds() / 86400.0)
    return 0.8 + 0.2 * math.exp(-age_days / RECENCY_DAYS)


def task_overlap(wanted: Sequence[str], name: str, content: str) -> float:
    """For a node reached by a hop during a build with a task: between ``1 - TASK_WEIGHT`` (it
    shares none of the task's terms) and 1 (all of them), so a neighbour about the task
    outranks one that is only near (a story's change log beside its acceptance criteria)."""
    if not wanted:
        return 1.0
    text = f"{name} {content[:OVERLAP_CHARS]}".lower()
    found = sum(1 for stem in wanted if stem in text)
    return 1.0 - TASK_WEIGHT + TASK_WEIGHT * found / len(wanted)

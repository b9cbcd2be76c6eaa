"""A synthetic knowledge graph for benchmarks: typed nodes with prose, ~N edges per node.

Text is drawn from a Zipf-distributed vocabulary of 20,000 pseudo-words (plus a few domain
words), which is how word frequencies in real specifications behave: a handful of very common
terms, a long tail of rare ones. ``--vocabulary small`` (70 words) is the pathological case in
which every word occurs in a large share of the nodes.
"""

from __future__ import annotations

import random
from itertools import accumulate

from kg.config import Scope
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.events.base import DomainEvent

DOMAIN = [
    "payment",
    "gateway",
    "checkout",
    "order",
    "invoice",
    "refund",
    "customer",
    "account",
    "password",
    "login",
    "token",
    "session",
    "policy",
    "audit",
    "decision",
    "component",
    "service",
    "database",
    "event",
    "stream",
    "projection",
    "index",
    "vector",
    "search",
    "graph",
    "node",
    "edge",
    "schema",
    "migration",
    "tenant",
    "project",
    "release",
    "deploy",
    "monitor",
    "alert",
    "latency",
    "cache",
    "queue",
    "worker",
    "retry",
    "timeout",
    "error",
    "solution",
    "skill",
    "learning",
    "function",
    "module",
    "interface",
    "contract",
    "budget",
    "security",
    "privacy",
    "consent",
    "export",
    "report",
    "review",
    "approval",
    "workflow",
]
TYPES = ("Decision", "Component", "Document", "Section", "Requirement", "ADR", "Function", "File")
EDGE_TYPES = ("REFERENCES", "USES", "CALLS", "BELONGS_TO", "DEFINES", "CONTAINS", "INFORMED_BY")


def _pseudo_words(n: int, rng: random.Random) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < n:
        length = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length)))
    return sorted(words)


class Vocabulary:
    def __init__(self, kind: str = "zipf", seed: int = 1) -> None:
        rng = random.Random(seed)
        if kind == "small":
            self.words = list(DOMAIN)
            self.weights = [1.0] * len(self.words)
        else:
            tail = _pseudo_words(20_000, rng)
            rng.shuffle(tail)
            self.words = DOMAIN + tail
            self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.cum = list(accumulate(self.weights))

    def sample(self, rng: random.Random, n: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum, k=n)


VOCAB = Vocabulary()
WORDS = DOMAIN  # query words that exist in every vocabulary


def sentence(rng: random.Random, n: int = 18, vocab: Vocabulary = VOCAB) -> str:
    return " ".join(vocab.sample(rng, n)).capitalize() + "."


def node_id(i: int) -> str:
    return f"{TYPES[i % len(TYPES)].lower()}:n{i}"


def graph_events(
    n_nodes: int, edges_per_node: int, seed: int = 7, vocab: Vocabulary = VOCAB
) -> list[DomainEvent]:
    rng = random.Random(seed)
    events: list[DomainEvent] = []
    for i in range(n_nodes):
        events.append(
            NodeAsserted(
                node_id=node_id(i),
                node_type=TYPES[i % len(TYPES)],
                name=f"{TYPES[i % len(TYPES)]} {i}: {sentence(rng, 5, vocab)}",
                content=sentence(rng, 18, vocab) + " " + sentence(rng, 18, vocab),
                labels=("sensitive",) if i % 50 == 0 else (),
            )
        )
    for i in range(n_nodes):
        for k in range(edges_per_node):
            # Mostly local links (a "neighbourhood") plus some long-range ones.
            j = (i + rng.randint(1, 50)) % n_nodes if k % 3 else rng.randrange(n_nodes)
            if j != i:
                events.append(
                    EdgeAsserted(
                        edge_type=EDGE_TYPES[(i + k) % len(EDGE_TYPES)],
                        from_node=node_id(i),
                        to_node=node_id(j),
                        weight=round(rng.uniform(0.2, 1.0), 2),
                    )
                )
    return events


async def append_all(
    store: EventStore, scope: Scope, events: list[DomainEvent], batch: int = 2000
) -> None:
    for start in range(0, len(events), batch):
        await store.append(scope, f"synthetic:{start // batch}", events[start : start + batch])

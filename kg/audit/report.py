"""``kg audit report --decision ID``: one self-contained HTML file a reviewer can read and file.

The decision (who, when, why), its lineage as a Mermaid diagram (the npm ``mermaid`` bundle is
inlined: the file opens with no network), each context graph that informed it with the nodes
it contributed, the policies applied and how many nodes they excluded or redacted (counted,
never named: nodes come from the policy-checked lineage, never from raw event payloads), and
the verification of the log (hash chain, Merkle tree, held checkpoints) with the inclusion
proofs of the decision's events.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from kg.audit.checkpoint import Checkpoint
from kg.audit.evidence import ConsistencyResult
from kg.audit.mermaid import lineage_mermaid
from kg.audit.verify import VerifyReport
from kg.lineage import Lineage

if TYPE_CHECKING:
    from kg.runtime import Runtime

_CSS = """
body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#111;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2rem}table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid
#ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f5f5f5}
code{font-size:.85em;word-break:break-all}.ok{color:#065f46;font-weight:600}
.fail{color:#b91c1c;font-weight:600}.muted{color:#666}.diagram{overflow-x:auto;border:1px solid
#ddd;padding:1rem;background:#fafafa}
"""


@dataclass(frozen=True)
class GraphSummary:
    """A context graph as its ContextGraphBuilt event logged it: counts and policy ids only."""

    context_graph_id: str
    mode: str
    position: int
    node_count: int
    policies_applied: tuple[str, ...]
    excluded_count: int
    redacted_count: int


@dataclass(frozen=True)
class ReportData:
    decision: dict[str, Any]
    lineage: Lineage
    graphs: list[GraphSummary]
    verify: VerifyReport
    checkpoints: list[ConsistencyResult]
    proof: dict[str, Any]
    proof_ok: bool
    generated_at: str


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def mermaid_bundle() -> str:
    return (resources.files("kg.audit") / "assets" / "mermaid.min.js").read_text(encoding="utf-8")


def render(data: ReportData) -> str:
    d, lineage = data.decision, data.lineage
    contained: dict[str, list[str]] = {}
    for link in lineage.links:
        if link.relation == "CONTAINED":
            contained.setdefault(link.from_id, []).append(link.to_id)
    graph_rows = []
    for g in data.graphs:
        nodes = contained.get(f"context_graph:{g.context_graph_id}", [])
        node_items = "".join(
            f"<li><code>{_e(n)}</code> {_e(lineage.steps[n].label)}</li>"
            for n in nodes
            if n in lineage.steps
        )
        graph_rows.append(
            f"<tr><td><code>{_e(g.context_graph_id)}</code><br/><span class=muted>{_e(g.mode)}, "
            f"position {g.position}, {g.node_count} nodes</span></td>"
            f"<td><ul>{node_items or '<li class=muted>none of its nodes</li>'}</ul></td>"
            f"<td>{'<br/>'.join(f'<code>{_e(p)}</code>' for p in g.policies_applied) or '-'}</td>"
            f"<td>{g.excluded_count} excluded, {g.redacted_count} redacted</td></tr>"
        )
    checks = [
        f"<li class={'ok' if data.verify.ok else 'fail'}>{_e(data.verify)}</li>",
        "<li>Merkle root recomputed from the events: "
        f"<code>{_e(data.verify.tree_root)}</code></li>",
    ] + [f"<li class={'ok' if c.ok else 'fail'}>{_e(c)}</li>" for c in data.checkpoints]
    proof_rows = "".join(
        f"<tr><td>{e['position']}</td><td>{_e(e['event_type'])}</td><td>{e['leaf_index']}</td>"
        f"<td><code>{_e(e['chain_hash'])}</code></td><td>{len(e['path'])} hashes</td></tr>"
        for e in data.proof["entries"]
    )
    excluded = lineage.excluded_by_policy
    mermaid = lineage_mermaid(lineage)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Decision {_e(d["id"])}: reviewer's report</title>
<style>{_CSS}</style></head><body>
<h1>Decision <code>{_e(d["id"])}</code></h1>
<p>{_e(d["text"])}</p>
<table>
<tr><th>who</th><td>{_e(d.get("actor") or "unknown")}</td></tr>
<tr><th>when</th><td>{_e(d.get("recorded_at"))} (log position {_e(d.get("position"))})</td></tr>
<tr><th>why</th><td>{_e(d.get("rationale") or "-")}</td></tr>
<tr><th>informed by</th><td>{len(data.graphs)} context graph(s)</td></tr>
</table>
<h2>Lineage</h2>
<div class="diagram"><pre class="mermaid">
{_e(mermaid)}</pre></div>
<p class=muted>{excluded} node(s) hidden by policy (counted, not shown).</p>
<h2>Context graphs used</h2>
<table><tr><th>graph</th><th>nodes it contributed</th><th>policies applied</th>
<th>by policy</th></tr>{"".join(graph_rows)}</table>
<h2>Verification</h2>
<ul>{"".join(checks)}</ul>
<h2>Inclusion proofs</h2>
<p class={"ok" if data.proof_ok else "fail"}>{len(data.proof["entries"])} event(s) proved in
the tree of {data.proof["tree_size"]} events with root <code>{_e(data.proof["root_hash"])}</code>
({"every proof verifies" if data.proof_ok else "a proof does NOT verify"}); the full proof file:
<code>kg audit prove {_e(d["id"])} -o proof.json</code>, checked offline with
<code>python -m kg.audit.check_proof proof.json checkpoint.json</code>.</p>
<table><tr><th>position</th><th>event</th><th>leaf</th><th>chain hash</th><th>path</th></tr>
{proof_rows}</table>
<p class=muted>Origin <code>{_e(data.proof["origin"])}</code>; generated {_e(data.generated_at)}
by kg.</p>
<script>{mermaid_bundle()}</script>
<script>mermaid.initialize({{startOnLoad: true, securityLevel: "strict"}});</script>
</body></html>
"""


def proof_verifies(proof: dict[str, Any]) -> bool:
    """Recheck every path against the proof's root (what check_proof does with a checkpoint)."""
    from kg.audit.merkle import ProofError, leaf_hash, verify_inclusion

    root = bytes.fromhex(proof["root_hash"])
    try:
        for e in proof["entries"]:
            verify_inclusion(
                e["leaf_index"],
                proof["tree_size"],
                leaf_hash(bytes.fromhex(e["chain_hash"])),
                [bytes.fromhex(h) for h in e["path"]],
                root,
            )
    except ProofError:
        return False
    return True


async def build_report(rt: Runtime, decision: str, checkpoints: list[Checkpoint]) -> str:
    """Gather everything the report shows, within the runtime's scope and policies."""
    from datetime import UTC, datetime

    from kg.audit.evidence import build_proof, check_checkpoint, subject_events
    from kg.audit.verify import verify_tenant
    from kg.lineage import trace_decision_lineage

    node_id = decision if decision.startswith("decision:") else f"decision:{decision}"
    lineage = await trace_decision_lineage(rt, node_id, "upstream", 3)
    async with rt.reader().snapshot(catch_up=False) as snap:  # the lineage caught up
        events = await subject_events(snap.conn, rt.scope, node_id)
    recorded = next(e for e in events if e.event_type == "DecisionRecorded")
    graphs = [
        GraphSummary(
            e.payload["context_graph_id"],
            e.payload.get("mode", "?"),
            e.position,
            len(e.payload.get("node_ids", [])),
            tuple(e.payload.get("policies_applied", [])),
            int(e.payload.get("excluded_count", 0)),
            int(e.payload.get("redacted_count", 0)),
        )
        for e in events
        if e.event_type == "ContextGraphBuilt"
    ]
    verify = await verify_tenant(rt.app_pool, rt.scope.tenant_id)
    results = [await check_checkpoint(rt.app_pool, rt.scope.tenant_id, cp) for cp in checkpoints]
    proof = await build_proof(
        rt.app_pool, rt.scope, node_id, checkpoints[-1] if checkpoints else None
    )
    step = lineage.steps[node_id]
    data = ReportData(
        decision={
            "id": node_id,
            "text": recorded.domain_payload.get("text", step.label),
            "rationale": recorded.domain_payload.get("rationale"),
            "actor": recorded.metadata.get("actor"),
            "recorded_at": recorded.recorded_at.isoformat(),
            "position": recorded.position,
        },
        lineage=lineage,
        graphs=graphs,
        verify=verify,
        checkpoints=results,
        proof=proof,
        proof_ok=proof_verifies(proof),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    return render(data)

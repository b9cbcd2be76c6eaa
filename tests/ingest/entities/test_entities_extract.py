"""Entity extraction while parsing: what a schema map's presets find in prose (no database)."""

from __future__ import annotations

import pytest

from kg.errors import ValidationError
from kg.ingest.markdown import parse_text
from kg.ingest.schema_map import DEFAULT_SCHEMA, SchemaMap, parse_schema_map
from kg.parsed.model import ParsedDocument

ALL = """\
entities:
  presets: [endpoints, events, bold_terms, relationships, glossary]
  bold_terms: APIObject
"""

CHARGES = """\
# Charges

A **Charge** requires a **Customer** and returns a **Balance Transaction**.
`POST /v1/charges` returns a **Charge**. A successful **Charge** triggers `charge.succeeded`.

**Note:** the sample lives in `config.yaml` and reads `charge.amount`. You **MUST** retry.

A **Refund** is not required by a **Customer**.

## Glossary

**Idempotency key**: a value that makes a retried request safe.

Payout
: money sent to a bank account.

### Dispute

A customer questions a **Charges** entry.
"""


def parse(text: str, schema: SchemaMap, path: str = "docs/charges.md") -> ParsedDocument:
    return parse_text(path, text, schema)


def entity_nodes(doc: ParsedDocument) -> dict[str, str]:
    return {n.node_id: n.node_type for n in doc.nodes if "Entity" in n.labels}


def edges(doc: ParsedDocument, edge_type: str) -> dict[tuple[str, str], dict[str, object]]:
    return {
        (e.from_node, e.to_node): {**e.properties, "weight": e.weight}
        for e in doc.edges
        if e.edge_type == edge_type
    }


def test_presets_find_endpoints_events_terms_and_concepts_but_not_labels_or_files() -> None:
    doc = parse(CHARGES, parse_schema_map(ALL, "schema.yaml"))
    assert entity_nodes(doc) == {
        "apiobject:charge": "APIObject",
        "apiobject:customer": "APIObject",
        "apiobject:balance transaction": "APIObject",
        "apiobject:refund": "APIObject",
        "endpoint:POST /v1/charges": "Endpoint",
        "event:charge.succeeded": "Event",
        "concept:idempotency key": "Concept",
        "concept:payout": "Concept",
        "concept:dispute": "Concept",
    }, "no **Note:**, **MUST**, config.yaml or charge.amount"
    names = {n.node_id: n.name for n in doc.nodes}
    assert names["apiobject:balance transaction"] == "Balance Transaction"


def test_mentions_are_weighted_by_occurrences_and_carry_file_and_line() -> None:
    doc = parse(CHARGES, parse_schema_map(ALL, "schema.yaml"))
    mentions = edges(doc, "MENTIONS")
    top = "section:docs/charges.md#charges"
    assert mentions[(top, "apiobject:charge")] == {"source": "docs/charges.md:3", "weight": 3.0}
    # "**Charges**" under the glossary is the same entity, mentioned from that section.
    assert (
        mentions[("section:docs/charges.md#dispute", "apiobject:charge")]["source"]
        == "docs/charges.md:19"
    )
    defines = edges(doc, "DEFINES")
    assert defines[("section:docs/charges.md#glossary", "concept:idempotency key")] == {
        "source": "docs/charges.md:12",
        "weight": 1.0,
    }
    assert ("section:docs/charges.md#dispute", "concept:dispute") in defines
    assert ("section:docs/charges.md#glossary", "apiobject:idempotency key") not in mentions


def test_relationship_lines_become_typed_edges_with_their_sources() -> None:
    doc = parse(CHARGES, parse_schema_map(ALL, "schema.yaml"))
    found = {
        (e.edge_type, e.from_node, e.to_node): e.properties["sources"]
        for e in doc.edges
        if "sources" in e.properties
    }
    assert found == {
        ("REQUIRES", "apiobject:charge", "apiobject:customer"): ["docs/charges.md:3"],
        # "... and returns" keeps the sentence's subject
        ("RETURNS", "apiobject:charge", "apiobject:balance transaction"): ["docs/charges.md:3"],
        ("RETURNS", "endpoint:POST /v1/charges", "apiobject:charge"): ["docs/charges.md:4"],
        ("TRIGGERS", "apiobject:charge", "event:charge.succeeded"): ["docs/charges.md:4"],
    }, "a negated line ('is not required by') states nothing"


def test_passive_voice_points_the_edge_from_the_actor() -> None:
    doc = parse("`invoice.paid` is triggered by an **Invoice**.\n", parse_schema_map(ALL, "s"))
    rel = [(e.edge_type, e.from_node, e.to_node) for e in doc.edges if "sources" in e.properties]
    assert rel == [("TRIGGERS", "apiobject:invoice", "event:invoice.paid")]


def test_custom_extractors_and_relation_verbs_come_from_the_schema_map() -> None:
    schema = parse_schema_map(
        ALL
        + """\
  extractors:
    - pattern: '\\b(?P<name>E\\d{4})\\b'
      type: ErrorCode
  relations:
    - pattern: 'is settled into'
      edge: SETTLES_INTO
""",
        "schema.yaml",
    )
    doc = parse("A **Charge** is settled into a **Payout**; it may fail with E1001.\n", schema)
    assert entity_nodes(doc)["errorcode:E1001"] == "ErrorCode"
    rel = [(e.edge_type, e.from_node, e.to_node) for e in doc.edges if "sources" in e.properties]
    assert rel == [("SETTLES_INTO", "apiobject:charge", "apiobject:payout")]


def test_without_an_entities_block_nothing_is_extracted() -> None:
    doc = parse(CHARGES, DEFAULT_SCHEMA)
    assert entity_nodes(doc) == {}
    assert not [e for e in doc.edges if e.edge_type == "MENTIONS"]


def test_code_blocks_are_not_prose() -> None:
    doc = parse("# A\n\n```\nPOST /v1/secret returns **Thing**\n```\n", parse_schema_map(ALL, "s"))
    assert entity_nodes(doc) == {}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("entities: [endpoints]", "entities: expected a mapping"),
        ("entities:\n  presets: [endpoint]", "unknown preset(s) ['endpoint']; available"),
        ("entities:\n  bold_terms: api object", "'api object' is not a node type name"),
        ("entities:\n  extractors:\n    - pattern: '('\n      type: X", "invalid regular"),
        ("entities:\n  relations:\n    - pattern: x\n      edge: requires", "not an edge type"),
        ("entities:\n  colour: red", "unknown key(s) ['colour']"),
        ("entities:\n  bold_terms: Section", "'Section' is a built-in node type"),
    ],
)
def test_a_malformed_entities_block_is_a_clear_error(block: str, message: str) -> None:
    with pytest.raises(ValidationError, match=r"schema\.yaml: entities") as caught:
        parse_schema_map(block, "schema.yaml")
    assert message in str(caught.value)


def test_a_name_no_node_id_can_hold_is_not_an_entity_and_costs_the_file_nothing() -> None:
    path = "/v1/" + "a" * 1500
    doc = parse(f"# A\n\n`POST {path}` returns a **Charge**.\n", parse_schema_map(ALL, "s"))
    assert entity_nodes(doc) == {"apiobject:charge": "APIObject"}
    assert doc.problems == () and any(n.node_id == "section:docs/charges.md#a" for n in doc.nodes)

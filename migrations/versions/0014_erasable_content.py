"""Erasable content: free text beside the log, so it can be forgotten without breaking a hash.

Why: the chain hashes each event's payload, so a leaked key or a person's data inside a payload
could only be removed by a superuser edit that ``kg audit verify`` reports as tampering. From
this revision an event's erasable fields (``DomainEvent.erasable_fields``: a node's content, a
decision's text and rationale) are stored in ``kg_event_content``, keyed by the event's
position, as the canonical JSON text ``body = {"fields": ..., "salt": 32 random hex digits}``;
the payload keeps ``"$content": {"digest": sha256(body), "fields": [...]}``. The chain, the
Merkle tree and the positions cover the digest, a salted commitment: it binds the content
(verify recomputes it) and, with the salt erased too, cannot be used to confirm a guess of what
was erased.

* ``kg_app`` may read content rows of its tenant, never write them: an append with content
  calls ``kg_append_events`` with one more argument (the bodies, one per event or NULL), which
  appends through the 0013 function (its tenant, position and hash-link checks) and inserts
  each body at its event's position. Content cannot be inserted without its event, so no
  stray row can block a later append or pose as restored content.
* ``kg_erase_content(tenant, position)`` (SECURITY DEFINER) is the only way the application
  removes content: it deletes exactly the positions listed by the ``ContentErased`` event at
  ``position`` of that tenant's log, so no content disappears without a receipt in the chain.

Keyed by position (not digest): appends insert in position order at the right edge of the
index, and a read joins on the key it already has.

Events appended before this revision keep their content inside the hashed payload: erasure
cannot remove it from the log (``kg erase`` says so and still clears projections, caches and
kept replays).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


_WITH_CONTENT = (
    "kg_append_events(text, text, timestamptz, text, bigint[], uuid[], text[], int[], text[], "
    "int[], text[], text[], text[], text[], text[])"
)


def _functions(schema: str) -> str:
    path = f'"{schema}", pg_temp'
    return f"""
CREATE FUNCTION kg_erase_content(p_tenant text, p_position bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_payload jsonb;
    v_count bigint;
BEGIN
    IF p_tenant IS DISTINCT FROM current_setting('kg.tenant_id', true) THEN
        RAISE EXCEPTION 'erasure for tenant % outside the transaction''s tenant scope', p_tenant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT e.payload INTO v_payload FROM kg_events e
     WHERE e.tenant_id = p_tenant AND e.position = p_position
       AND e.event_type = 'ContentErased';
    IF v_payload IS NULL THEN
        RAISE EXCEPTION 'no ContentErased event at position % of tenant %', p_position, p_tenant
            USING ERRCODE = 'no_data_found';
    END IF;
    DELETE FROM kg_event_content c
     WHERE c.tenant_id = p_tenant
       AND c.position IN (SELECT (x->>'position')::bigint
                            FROM jsonb_array_elements(v_payload->'erased') x);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END $$;
REVOKE ALL ON FUNCTION kg_erase_content(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kg_erase_content(text, bigint) TO kg_app;

CREATE FUNCTION kg_append_events(
    p_tenant text, p_project text, p_recorded_at timestamptz, p_idempotency_key text,
    p_positions bigint[], p_event_ids uuid[], p_stream_ids text[], p_versions int[],
    p_types text[], p_schema_versions int[], p_payloads text[], p_metadata text[],
    p_prev_hashes text[], p_hashes text[], p_contents text[]
) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_head bigint;
BEGIN
    IF cardinality(p_contents) IS DISTINCT FROM cardinality(p_positions) THEN
        RAISE EXCEPTION 'append has % content entries for % events',
            cardinality(p_contents), cardinality(p_positions)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_head := kg_append_events(p_tenant, p_project, p_recorded_at, p_idempotency_key,
        p_positions, p_event_ids, p_stream_ids, p_versions, p_types, p_schema_versions,
        p_payloads, p_metadata, p_prev_hashes, p_hashes);
    INSERT INTO kg_event_content (tenant_id, position, body)
    SELECT p_tenant, p, b FROM unnest(p_positions, p_contents) AS x(p, b) WHERE b IS NOT NULL;
    RETURN v_head;
END $$;
REVOKE ALL ON FUNCTION {_WITH_CONTENT} FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {_WITH_CONTENT} TO kg_app;
"""


def upgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(
        """
        CREATE TABLE kg_event_content (
            tenant_id text   NOT NULL,
            position  bigint NOT NULL,
            body      text   NOT NULL,
            PRIMARY KEY (tenant_id, position)
        );
        ALTER TABLE kg_event_content ENABLE ROW LEVEL SECURITY;
        CREATE POLICY kg_event_content_tenant ON kg_event_content TO kg_app
            USING (tenant_id = current_setting('kg.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('kg.tenant_id', true));
        GRANT SELECT ON kg_event_content TO kg_app;
        CREATE FUNCTION kg_event_content_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'kg_event_content is never updated: content is erased whole, '
                'through kg_erase_content' USING ERRCODE = 'insufficient_privilege';
        END $$;
        CREATE TRIGGER kg_event_content_no_update BEFORE UPDATE ON kg_event_content
            FOR EACH ROW EXECUTE FUNCTION kg_event_content_immutable();
        """
    )
    op.execute(_functions(schema))


def _to_base() -> bool:
    """Whether this downgrade goes all the way to base, which drops the log itself."""
    from alembic import context

    return context.get_revision_argument() is None  # Alembic spells base as None


def downgrade() -> None:
    if _to_base():
        op.execute(
            f"""
            DROP FUNCTION {_WITH_CONTENT};
            DROP FUNCTION kg_erase_content(text, bigint);
            DROP TABLE kg_event_content;
            DROP FUNCTION kg_event_content_immutable();
            """
        )
        return
    # Below 0014 kg cannot read an event whose content is kept apart: refuse rather than lose it.
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM kg_events WHERE payload ? '$content') THEN
                RAISE EXCEPTION 'cannot downgrade below 0014: events keep their erasable '
                    'content beside the log (kg_event_content)'
                    USING ERRCODE = 'object_not_in_prerequisite_state';
            END IF;
        END $$;
        DROP FUNCTION kg_erase_content(text, bigint);
        DROP TABLE kg_event_content;
        DROP FUNCTION kg_event_content_immutable();
        """
    )
    op.execute(f"DROP FUNCTION {_WITH_CONTENT}")

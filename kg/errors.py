"""The product's exceptions: a small hierarchy whose messages tell the user what to do.

Every error a user or an agent can cause derives from :class:`KgError`. The CLI and the MCP
server print ``str(error)`` as is, so each message names the offending thing and the fix.
"""

from __future__ import annotations


class KgError(Exception):
    """Base of every error the product raises on purpose."""


class ConfigurationError(KgError):
    """A setting (environment variable, config file, option) is missing or malformed."""


class DatabaseUnavailableError(KgError):
    """The database cannot be reached or is not at the expected schema revision."""


class ServerInUseError(KgError):
    """The embedded server cannot be stopped: live ``kg`` processes are using it."""


class SchemaNotReadyError(DatabaseUnavailableError):
    """The database is reachable but its schema is not at head: run ``kg db upgrade``."""


class ValidationError(KgError):
    """Input failed validation; the message names the field and the reason."""


class ConcurrencyConflictError(KgError):
    """An append carried an expected stream version that no longer holds."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stream {stream_id!r} is at version {actual}, but the append expected version "
            f"{expected}; nothing was written. Re-read the stream and retry the command."
        )


class ProjectionLagError(KgError):
    """A read waited for the projections to reach the caller's own write and they did not in
    time (the background projector is far behind, or stopped)."""


class BackfillConflictError(KgError):
    """Another backfill of the same legacy file into the same scope is running, or another
    writer appended to one of its streams during this run."""


class IdempotencyKeyReusedError(KgError):
    """An idempotency key was reused for a different command."""


class NotFoundError(KgError):
    """A named entity (node, stream, context graph, decision) does not exist in this scope."""


class PolicyDeniedError(KgError):
    """A policy forbids the request. The message never names or describes denied content."""


class ActionRefusedError(PolicyDeniedError):
    """A policy does not grant the calling actor the action (tool call or command) it tried.
    The message names the action, the actor and the refusing policies, never node content."""

    def __init__(self, message: str, policy_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.policy_ids = policy_ids


class EmbeddingError(KgError):
    """An embedding provider failed or was configured inconsistently."""


class IntegrityError(KgError):
    """The audit trail failed verification (hash chain broken, projection digest differs)."""


class EvidenceError(KgError):
    """A checkpoint, proof or key file is unreadable, forged, or belongs to another log or
    tenant. The message says which file and what is wrong with it."""


class ErasureError(KgError):
    """An erasure cannot be done as asked (nothing selected, a receipt that does not check)."""


class PolicyFilesError(KgError):
    """A policy file has an error, so nothing new is ingested (fail closed): ingesting while
    the intended policy is not in force would hand agents what it was written to withhold.
    The message lists every ``file:line`` to fix; the policies already in force stay."""

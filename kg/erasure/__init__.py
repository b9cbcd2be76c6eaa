"""Forgetting with a receipt: ``kg erase`` removes content everywhere and proves nothing else
changed.

* :mod:`kg.erasure.plan` finds what a selection (node, source file, pattern) touches: the
  events whose erasable content it selects, the projected rows, passages, embedding-cache
  entries and kept replays that hold it, and what cannot be erased (content inside the hashed
  payload of events written before migration 0014).
* :mod:`kg.erasure.execute` appends ``ContentErased``, removes the content through
  ``kg_erase_content`` (it deletes only what that event lists), re-derives the projected rows
  in the live schema and every kept replay, drops the cache entries and vacuums what it touched.
* :mod:`kg.erasure.receipt` writes the receipt (signed with an audit key when given) and checks
  one against the log.
"""

from kg.erasure.execute import ErasureResult, erase
from kg.erasure.plan import ErasurePlan, Selection, plan_erasure
from kg.erasure.receipt import ReceiptCheck, build_receipt, check_receipt

__all__ = [
    "ErasurePlan",
    "ErasureResult",
    "ReceiptCheck",
    "Selection",
    "build_receipt",
    "check_receipt",
    "erase",
    "plan_erasure",
]

"""Keeping the garbage collector out of bulk reads: only when it runs changes, never what."""

from __future__ import annotations

import gc

from kg.gc_pause import collector_paused, heap_frozen


def test_the_collector_is_paused_for_the_block_and_back_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer block still owns the pause
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_heap_is_frozen_for_the_block_and_collectable_again_after() -> None:
    with heap_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0

"""gc_paused: the cyclic collector is off inside, nested pauses hold it off, and the state the
process had before comes back afterwards (also after an exception)."""

import gc
import threading

import pytest

from decoy_lab.gcpause import gc_paused


def test_paused_inside_and_restored_after_nesting_and_errors():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), gc_paused():
        1 / 0
    assert gc.isenabled()


def test_a_process_that_had_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_from_two_threads_end_with_the_collector_back_on():
    inside, release = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    with gc_paused():
        t.start()
        inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still open
    release.set()
    t.join(10)
    assert gc.isenabled()


class _Node:
    def __init__(self):
        self.other = None


def test_what_a_pause_made_goes_to_the_oldest_generation_unscanned():
    gc.collect()
    with gc_paused():
        made = [[i] for i in range(5000)]
    assert gc.get_count()[0] < 100, "no young objects left to scan one generation at a time"
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(m) in oldest for m in made[::500])


def test_a_cycle_made_during_a_pause_is_still_collected():
    import weakref

    with gc_paused():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
    assert ref() is not None  # only a cycle keeps it: reference counting cannot free it
    gc.collect()
    assert ref() is None


def test_objects_the_process_froze_itself_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with gc_paused():
            made = [[i] for i in range(1000)]
        # Not unfrozen (the count would drop to 0) and what the pause made not frozen with them
        # (the count would grow by about 1,000); other threads of the process may free a few
        # frozen objects meanwhile, so the count is a range, not a number.
        assert frozen - 100 < gc.get_freeze_count() < frozen + len(made) // 2
    finally:
        gc.unfreeze()

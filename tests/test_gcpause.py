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
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
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

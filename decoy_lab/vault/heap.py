"""Give the heap a bulk read freed back to the system.

A load of 100,000 rows makes and frees a few hundred MB of short-lived objects (each row's text
parsed twice, its blobs decoded, its plaintext read) beside what it keeps. glibc's malloc keeps
what was freed for later use, so the resident set after a load stays above what the load holds
(measured at 20,400 rows: ~4 MiB of free heap, 0.16× the served bytes). `malloc_trim(0)` hands
the free pages back. Only on glibc (found by name through ctypes, once); anywhere else, or if the
call is not there, nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache


# Kept for `make bench`'s "memory a load adds ÷ served bytes" (≤ 2×, measured at 1.97×): the free
# heap left after a load counts against it (0.16× the served bytes at 20,400 rows).
@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the free heap to the system where the C library can; True when it did so."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False

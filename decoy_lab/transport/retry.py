"""The spec's retry rule, held once: `RetryPolicy` is how often and how long a connection tries
again, and `run` sends under it. An unknown outcome resends the SAME body; a 429 waits as told.
The error a call ends in carries what every send of it ended in (`attempts_of`), so a message can
say what each attempt did."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from decoy_lab.errors import RateLimited, ReviewBusy, ServerError, TransportError
from decoy_lab.shapes import fits

T = TypeVar("T")

MAX_RATE_LIMIT_WAIT = 300.0  # seconds: a longer 429 wait is reported, not slept through


def attempts_of(exc: BaseException) -> list[BaseException]:
    """What each send of the call that ended in `exc` ended in, first to last (`exc` itself last);
    just `exc` when it was not raised by `send_with_retries`."""
    return [*getattr(exc, "earlier_attempts", ()), exc]


def _ended(exc: BaseException, tried: list[BaseException]) -> None:
    """Hang the earlier attempts' errors on the last one, without their tracebacks (whose frames
    would keep each request alive): only what they say is wanted."""
    earlier = [e.with_traceback(None) for e in tried if e is not exc]
    exc.earlier_attempts = earlier  # type: ignore[attr-defined]  # read by attempts_of


def send_with_retries(
    send: Callable[[], T],
    *,
    retries: int,
    backoff: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, BaseException], None] | None = None,
    max_backoff: float = 8.0,
) -> T:
    """Call `send` (which must resend the SAME body) under the spec's retry rules.

    Unknown outcome (TransportError, 5xx) or `REVIEW_BUSY` ("send this one again"): try again up
    to `retries` more times, waiting `backoff`, doubling each time. 429: wait `retry_after_seconds`
    (counts as an attempt), unless it is over MAX_RATE_LIMIT_WAIT: then the RateLimited error, which
    carries the wait, is raised at once. Anything else is a definite answer and is raised at once.
    """
    attempt = 0
    tried: list[BaseException] = []
    while True:
        try:
            return send()
        except RateLimited as exc:
            attempt += 1
            tried.append(exc)
            if attempt > retries:
                _ended(exc, tried)
                raise
            wait = exc.retry_after if fits(exc.retry_after, float) else backoff
            if wait > MAX_RATE_LIMIT_WAIT:  # not a pause to sit through inside one call: say so now
                _ended(exc, tried)
                raise
            if on_retry:
                on_retry(attempt, exc)
            sleep(max(0.0, float(wait)))
        except (TransportError, ServerError, ReviewBusy) as exc:
            attempt += 1
            tried.append(exc)
            if attempt > retries:
                if isinstance(exc, ReviewBusy):
                    exc.sends = attempt
                _ended(exc, tried)
                raise
            if on_retry:
                on_retry(attempt, exc)
            sleep(min(max_backoff, backoff * (2 ** (attempt - 1))))


@dataclass
class RetryPolicy:
    """How a connection tries again: `retries` more sends at most, waiting `backoff` s (doubling)
    through `sleep` (a test passes a fake one)."""

    retries: int = 5
    backoff: float = 0.25
    sleep: Callable[[float], Any] = time.sleep

    def run(self, send: Callable[[], T], *, on_retry: Callable[[int, BaseException], None] | None = None) -> T:
        """`send_with_retries` under this policy."""
        return send_with_retries(send, retries=self.retries, backoff=self.backoff, sleep=self.sleep, on_retry=on_retry)

"""The frames the proxy's process sends for each exchange: an exchange that begins and ends between
two flushes goes as one `whole` frame, and whatever is held back never changes the order the
inspector's process numbers flows in, nor leaves a frame about an exchange before its begin."""

from __future__ import annotations

from decoy_lab.inspector import flow_record
from decoy_lab.inspector.proxy_child import PIECE, Relay
from decoy_lab.inspector.tee import Tee


class FakeControl:
    """Control's side the Relay uses: frames queued in order, a flush on demand."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self.before_flush = None

    def send(self, message: tuple, *, now: bool = False) -> None:
        self.sent.append(message)

    def wake(self) -> None:
        pass

    def flush(self) -> None:
        if self.before_flush is not None:
            self.before_flush()


def _relay() -> tuple[Relay, FakeControl]:
    control = FakeControl()
    return Relay(control, 1 << 20, 0.0), control  # type: ignore[arg-type]


def _begin(relay: Relay, path: str = "/api/agent/context/memories") -> flow_record.Flow:
    return relay.begin("POST", path, "", [("authorization", "Bearer x")], "HTTP/1.1")


def _finish(relay: Relay, flow: flow_record.Flow, status: int = 201) -> None:
    flow.status = status
    relay.answered(flow)
    req, resp = Tee(1 << 20), Tee(1 << 20)
    req.add(b"{}")
    resp.add(b"[]")
    relay.finish(flow, req, resp, [("content-type", "application/json")], ended=flow_record.ANSWERED)


def kinds(control: FakeControl) -> list[tuple[str, int]]:
    return [(m[0], m[1]) for m in control.sent]


def test_an_exchange_between_two_flushes_is_one_whole_frame_with_its_begin_and_end():
    relay, control = _relay()
    flow = _begin(relay)
    assert control.sent == []  # held until the flush or the end
    _finish(relay, flow)
    (whole,) = control.sent
    assert whole[:4] == ("whole", 1, "POST", "/api/agent/context/memories")
    facts = whole[9]
    assert facts[0] == 201 and facts[5] == flow_record.ANSWERED
    assert whole[10][0] == b"{}" and whole[11][0] == b"[]"


def test_one_that_ends_first_does_not_overtake_an_earlier_begin():
    relay, control = _relay()
    first, second = _begin(relay), _begin(relay)
    _finish(relay, second)
    assert kinds(control) == [("begin", 1), ("whole", 2)]
    _finish(relay, first)
    assert kinds(control) == [("begin", 1), ("whole", 2), ("answer", 1), ("end", 1)]


def test_a_flush_sends_held_begins_and_an_answer_that_came_meanwhile():
    relay, control = _relay()
    flow = _begin(relay)
    flow.status = 200
    relay.answered(flow)  # held with its begin: not sent on its own
    assert control.sent == []
    control.flush()
    assert kinds(control) == [("begin", 1), ("answer", 1)]
    _finish(relay, flow, 200)
    assert kinds(control)[-1] == ("end", 1)


def test_a_large_body_sends_its_begin_before_its_first_piece():
    relay, control = _relay()
    _begin(relay)
    flow = _begin(relay)
    tee = relay.tee(flow, "request")
    tee.add(b"x" * (PIECE + 1))
    assert kinds(control) == [("begin", 1), ("begin", 2), ("body", 2)]

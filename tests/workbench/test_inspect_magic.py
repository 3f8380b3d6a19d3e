"""`%decoy inspect` in a real IPython shell: it returns the live inspector at once, shows its flows
view, and the flows fill while later code writes through it over real HTTP; running it again
replaces the previous proxy and says so; `--stop` ends it; mistakes are one line."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from decoy_lab.client.connection import Connection
from decoy_lab.inspector import Inspector
from decoy_lab.sandbox import Sandbox
from decoy_lab.widgets.flows import FlowsPanel

from support.magics import decoy_shell, shown_widgets
from support.polling import wait_for


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    with decoy_shell(tmp_path_factory.mktemp("decoy-config")) as shell:
        shell.run_line_magic("config", "DecoyMagics.sandbox_options = {'seed': 'none'}")
        yield shell


@pytest.fixture(scope="module")
def magics(ip):
    m = ip.magics_manager.registry["DecoyMagics"]
    m.inspector = m.sandbox = None  # a shared shell: whatever an earlier module left is not ours to use
    yield m
    if m.inspector is not None:
        m.inspector.close()
    if m.sandbox is not None:
        m.sandbox.stop()
    m.inspector = m.sandbox = None  # the shell is shared: the next module starts from nothing


def test_inspect_returns_while_nothing_is_exchanged_and_its_view_fills_as_a_later_cell_writes(ip, magics):
    with capture_output() as shown:
        insp = ip.run_line_magic("decoy", "inspect")
    assert isinstance(insp, Inspector) and insp.running and insp is magics.inspector
    assert magics.sandbox is not None and insp.upstream == magics.sandbox.url  # no argument: the embedded sandbox
    # the magic returned (how soon: bench/responsive.py) with no exchange yet: the proxy runs on
    # its own thread, and the view fills as a later cell writes
    assert any(insp.url in str(o.data) for o in shown.outputs)  # the URL to give the agent
    (panel,) = shown_widgets(shown)
    assert isinstance(panel, FlowsPanel) and panel.flows.source is insp
    assert panel.flows.count == "0 exchanges"
    # a later cell: an agent pairs and writes through the inspector while the kernel is free
    conn = Connection.pair(
        insp.url, name="inspect-magic agent", permissions=["memory.read", "memory.save"], profile=None
    )
    try:
        conn.save("Lisbon in May, a window seat", topic="Lisbon trip", topic_type="trip", link="is planning")
    finally:
        conn.close()
    insp.settle(10)
    posts = wait_for(lambda: [f for f in panel.flows.flows if f.method == "POST" and f.path.endswith("/memories")])
    assert posts[0].status == 201 and posts[0].verdict == "readable"  # opened with the sandbox owner's key
    assert len(panel.flows.flows) == len(insp) >= 4
    assert panel.flows.count == f"{len(insp)} exchanges"


def test_running_it_again_stops_the_previous_proxy_and_says_so(ip, magics, tmp_path):
    first = ip.run_line_magic("decoy", "inspect --sandbox")
    url = first.url
    record = tmp_path / "run.har"
    with capture_output() as said:
        second = ip.run_line_magic("decoy", f"inspect --record {record}")
    assert f"Stopped the previous inspector on {url}" in said.stdout
    assert not first.running and second.running and magics.inspector is second
    with capture_output() as said:
        assert ip.run_line_magic("decoy", "inspect --stop") is None
    assert "Stopped the previous inspector" in said.stdout and f"recording is in {record}" in said.stdout
    assert not second.running and magics.inspector is None and record.is_file()
    with capture_output() as said:
        ip.run_line_magic("decoy", "inspect --stop")
    assert "No inspector is running." in said.stdout


def test_inspect_a_url_records_in_front_of_that_server(ip, magics):
    with Sandbox.start(seed="none") as other:
        with capture_output():
            insp = ip.run_line_magic("decoy", f"inspect {other.url}")
        try:
            assert insp.upstream == other.url and insp.sandbox is None
            conn = Connection.pair(insp.url, name="url agent", permissions=["memory.read"], profile=None)
            conn.close()
            insp.settle(10)
            assert any(f.path == "/oauth/device" and f.status == 200 for f in insp)
        finally:
            ip.run_line_magic("decoy", "inspect --stop")


@pytest.mark.parametrize(
    "line, said",
    [
        ("inspect ftp://example.org", "not an http:// or https:// URL"),
        ("inspect http://127.0.0.1:9 --sandbox", "a URL or --sandbox, not both"),
        ("inspect --agent-key /no/such.pem", "--agent-key /no/such.pem: no such file"),
        (f"inspect --agent-key {__file__}", f"--agent-key {__file__}: not an unencrypted RSA private key"),
        ("inspect --port 70000", "is not a TCP port"),
        ("inspect --record /no/such/dir/run.har", "its folder does not exist"),
        ("inspect --sandboxx", "did you mean '--sandbox'"),
    ],
)
def test_mistakes_are_one_line_and_start_nothing(ip, magics, line, said):
    before = magics.inspector
    with pytest.raises(UsageError, match="^%decoy inspect: ") as got:
        ip.run_line_magic("decoy", line)
    assert said in str(got.value) and "usage: %decoy inspect" in str(got.value)
    assert magics.inspector is before


def test_tab_completes_its_flags(magics):
    assert "inspect" in magics.complete("%decoy insp")
    assert set(magics.complete("%decoy inspect --")) == {"--sandbox", "--agent-key", "--record", "--port", "--stop"}
    assert magics.complete("%decoy inspect --re") == ["--record"]

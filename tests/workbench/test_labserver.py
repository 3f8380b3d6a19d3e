"""JupyterLab's kernel websocket without Nagle's delay: the server extension this package installs
(decoy_lab/workbench/notebook/labserver.py says why; bench/widgets.py measures a round trip)."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest
from jupyter_core.paths import jupyter_config_path
from jupyter_server.config_manager import BaseJSONConfigManager
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from tornado import httpserver, netutil, web, websocket

from decoy_lab.workbench.notebook import labserver

from support.lab import running_lab

MODULE = "decoy_lab.workbench.notebook.labserver"


def test_the_installed_jupyter_config_enables_the_extension():
    """The JSON the package installs under etc/jupyter is found where Jupyter looks for it."""
    enabled = {}
    for path in reversed(jupyter_config_path()):  # the nearest path last, as Jupyter merges them
        found = BaseJSONConfigManager(config_dir=path).get("jupyter_server_config.d/decoy_lab")
        enabled.update(found.get("ServerApp", {}).get("jpserver_extensions", {}))
    assert enabled.get(MODULE) is True


class _App:
    def __init__(self, cls):
        self.web_app = type("W", (), {"settings": {labserver.SETTING: cls}})()


def test_loading_it_makes_the_default_kernel_channels_prompt_and_leaves_others_alone():
    app = _App(ZMQChannelsWebsocketConnection)
    labserver._load_jupyter_server_extension(app)
    assert app.web_app.settings[labserver.SETTING] is labserver.PromptChannels
    other = type("GatewayChannels", (ZMQChannelsWebsocketConnection,), {})
    app = _App(other)
    labserver._load_jupyter_server_extension(app)
    assert app.web_app.settings[labserver.SETTING] is other


def test_prompt_sets_tcp_nodelay_on_a_real_tornado_websocket():
    seen: list[int] = []

    class Handler(websocket.WebSocketHandler):
        def open(self):
            sock = self.ws_connection.stream.socket
            before = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            labserver.prompt(self, logging.getLogger("test"))
            seen.extend([before, sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)])
            self.write_message("opened")

    async def main():
        [sock] = netutil.bind_sockets(0, "127.0.0.1")
        server = httpserver.HTTPServer(web.Application([("/ws", Handler)]))
        server.add_sockets([sock])
        conn = await websocket.websocket_connect(f"ws://127.0.0.1:{sock.getsockname()[1]}/ws")
        assert await asyncio.wait_for(conn.read_message(), 10) == "opened"
        conn.close()
        server.stop()

    asyncio.run(main())
    assert seen == [0, 1]  # off as jupyter_server leaves it, then on


def test_prompt_never_raises():
    class Gone:
        def set_nodelay(self, value):
            raise AttributeError("'NoneType' object has no attribute 'set_nodelay'")

    labserver.prompt(Gone(), logging.getLogger("test"))


@pytest.mark.timeout(120)
def test_a_jupyterlab_started_here_loads_it(tmp_path):
    with running_lab(tmp_path):
        pass
    assert f"{MODULE} | extension was successfully loaded" in (tmp_path / "lab.log").read_text()


def test_loading_it_gives_a_server_started_by_hand_the_save_hook_and_make_labs_no_second(tmp_path, monkeypatch):
    """A `jupyter lab` typed in the checkout has no config naming the save hook: the extension
    registers it (clean.py); under `make lab`'s config, which names it, it adds none."""
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from decoy_lab.workbench.notebook import clean

    for part in ("pyproject.toml", "decoy_lab/__init__.py", "scripts/lab_config.py"):  # a checkout
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / part).write_text("")
    (tmp_path / "notebooks").mkdir()
    calls: list[dict] = []
    monkeypatch.setattr(clean, "stripped", lambda nb, meta=None: calls.append(nb) or nb)
    by_hand = _App(ZMQChannelsWebsocketConnection)
    by_hand.contents_manager = FileContentsManager(root_dir=str(tmp_path))
    labserver._load_jupyter_server_extension(by_hand)
    model = {"type": "notebook", "content": {"cells": [], "metadata": {}}}
    by_hand.contents_manager.run_pre_save_hooks(model=model, path="notebooks/a.ipynb")
    assert len(calls) == 1, "the hook ran, once"
    configured = FileContentsManager(root_dir=str(tmp_path), pre_save_hook=clean.pre_save_hook)
    assert clean.install(configured) is False

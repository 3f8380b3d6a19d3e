"""The package's Jupyter server extension: JupyterLab's kernel connection sent without Nagle's
algorithm, and the checkout's notebooks saved without outputs.

jupyter_server writes each kernel message to the page's websocket as it comes, and leaves the
socket's TCP_NODELAY unset. A busy kernel sends a few small messages at once (status, a widget's
update, status), and with Nagle's algorithm on, the second waits for the page to acknowledge the
first, which Linux delays by up to 40 ms. Measured on a widget round trip (a value typed in the
page, a linked widget updated by the kernel): 52 ms median with Nagle, 20–25 ms without, nearly all of
the difference on the way back. tornado's docs advise `set_nodelay(True)` for such sockets.

`jupyter-config/jupyter_server_config.d/decoy_lab.json`, installed with the package as JupyterLab's
extensions install theirs, enables this module; it makes `PromptChannels` the server's kernel
websocket connection when the server uses its default one (not a gateway's, nor one configured).

It also registers clean.py's pre-save hook on the server's contents manager (unless a config such
as `make lab`'s names it already), so a `jupyter lab` started by hand in a checkout, rooted at the
checkout or at its `notebooks/`, saves the tracked notebooks without outputs as `make lab` does.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

SETTING = "kernel_websocket_connection_class"


class PromptChannels(ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel channels over a websocket with TCP_NODELAY set."""

    def connect(self) -> Any:  # the parent's own: a Future, or None when the connection failed
        prompt(self.websocket_handler, self.log)
        return super().connect()


def prompt(handler: Any, log: Any) -> None:
    """TCP_NODELAY on an open tornado websocket; a failure is logged, never raised (a latency
    tweak must never keep a kernel from connecting)."""
    try:
        handler.set_nodelay(True)
    except Exception:
        log.debug("could not set TCP_NODELAY on the kernel websocket", exc_info=True)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    settings = serverapp.web_app.settings
    if settings.get(SETTING) is ZMQChannelsWebsocketConnection:
        settings[SETTING] = PromptChannels
    contents = getattr(serverapp, "contents_manager", None)
    if contents is not None:
        from decoy_lab.workbench.notebook import clean

        clean.install(contents)

"""Set the stage once per run: start the sandbox, pair the bench's connection, seal the rows
for its key, POST them in batches and read them back as GET /memories serves them. Every
benchmark then works on `ctx.served`, the same rows.

Without a sandbox (`--offline`, or when it cannot start) the rows are sealed for fresh keys
and shaped as the server would serve them to their author; the benchmarks that need HTTP
report NOT MEASURED with the reason.
"""

from __future__ import annotations

from typing import Any

from decoy_lab.memory import KeyCache, RecipientKeys
from decoy_lab.wire.crypto import AgentKey

from .context import Context
from .data import Dataset, as_served, generate

MEMORIES = "/api/agent/context/memories"
BENCH_PERMISSIONS = ["memory.read", "memory.save"]


_APIS: dict[int, Any] = {}


def same_pairing(conn: Any, **options: Any):
    """Another Connection object for the same paired connection (same key and token), nothing
    read yet: `options` as for Connection (`profile=None` keeps it off disk)."""
    from decoy_lab.client.connection import Connection

    return Connection(
        conn.base_url,
        agent_key=conn.agent_key,
        tokens=conn.tokens,
        client_id=conn.client_id,
        name=conn.name,
        **options,
    )


def api_of(conn: Any):
    """An HTTP client (decoy_lab.transport.api.Api) carrying the connection's token, for the raw batched
    POSTs and timed GETs a benchmark sends itself (Connection keeps its own Api private)."""
    from decoy_lab.transport.api import Api

    api = _APIS.get(id(conn))
    if api is None:
        api = _APIS[id(conn)] = Api(conn.base_url, tokens=conn.tokens, client_id=conn.client_id)
    return api


def start_sandbox(**opts: Any):
    """A sandbox whose simulated owner phone never runs its sharing pass on its own. The real
    phone is another device; in the sandbox its pass would run inside a GET, on these cores
    (an RSA unwrap per stored row), and be timed as if it were the server or the client."""
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.sandbox.phone import schedule

    sb = Sandbox.start(**opts)
    schedule.configure(sb.state, auto_share_after=None)
    return sb


def pair(sb: Any, name: str, permissions: list[str] | None = None):
    """A Connection paired with the sandbox (auto-approved), with no profile on disk: a bench
    run never touches the user's saved connections."""
    from decoy_lab.client.connection import Connection

    return Connection.pair(
        sb.url, name=name, permissions=permissions or BENCH_PERMISSIONS, profile=None, on_link=lambda link, code: None
    )


def upload(api: Any, batches: list[list[dict]]) -> int:
    """POST every batch; returns how many rows the server created."""
    created = 0
    for batch in batches:
        answer = api.request("POST", MEMORIES, json={"rows": batch})
        created += len(answer.get("created") or [])
    return created


def stage_rows(ctx: Context, conn: Any) -> tuple[Dataset, list[dict]]:
    """Seal `ctx.sizes` of rows for `conn`'s key, POST them in batches and read them back: the
    dataset and the rows as GET /memories serves them."""
    ctx.say(f"sealing {ctx.sizes.label}")
    dataset = generate(conn.agent_key, conn.keys(), ctx.sizes, workers=ctx.workers)
    api = api_of(conn)
    ctx.say(f"uploading {len(dataset):,} rows in {len(dataset.batches)} POSTs")
    created = upload(api, dataset.batches)
    if created != len(dataset):
        raise RuntimeError(f"the sandbox created {created} of {len(dataset)} rows")
    answer = api.request("GET", MEMORIES)
    served = [r for r in answer.get("memories") or [] if isinstance(r, dict)]
    if len(served) != len(dataset):
        raise RuntimeError(f"GET /memories served {len(served)} of the {len(dataset)} rows saved")
    return dataset, served


def _online(ctx: Context) -> None:
    ctx.say("starting the sandbox and pairing the bench connection")
    ctx.sandbox = start_sandbox(seed="none")
    ctx.conn = pair(ctx.sandbox, "bench")
    ctx.dataset, ctx.served = stage_rows(ctx, ctx.conn)
    ctx.served_from = "served by the sandbox"


def _offline(ctx: Context) -> None:
    agent, owner = AgentKey.generate(), AgentKey.generate()
    ctx.say(f"sealing {ctx.sizes.label} offline")
    ctx.dataset = generate(
        agent, RecipientKeys(owner.public_key_b64, agent.public_key_b64), ctx.sizes, workers=ctx.workers
    )
    ctx.served = as_served(ctx.dataset.rows)
    ctx.served_from = "built offline (no sandbox)"


def prepare(ctx: Context, *, offline: bool = False) -> None:
    if not offline:
        try:
            _online(ctx)
            return
        except Exception as exc:  # report precisely, then fall back on rows built offline
            ctx.setup_error = f"no sandbox run: {type(exc).__name__}: {exc}"
            ctx.say(ctx.setup_error)
            teardown(ctx)
    else:
        ctx.setup_error = "--offline: sandbox benchmarks skipped"
    _offline(ctx)


def teardown(ctx: Context) -> None:
    for api in _APIS.values():
        api.close()
    _APIS.clear()
    for attr in ("conn", "sandbox"):
        thing = getattr(ctx, attr)
        setattr(ctx, attr, None)
        closer = getattr(thing, "close", None) or getattr(thing, "stop", None)
        if closer is not None:
            try:
                closer()
            except Exception:  # a failed close must not hide the figures
                pass


def loaded_vault(ctx: Context):
    """The Vault the last load() returned, or one built from the served rows (offline)."""
    if ctx.vault is not None:
        return ctx.vault
    from decoy_lab.vault.read import build_vault

    ctx.vault = build_vault({"memories": ctx.served}, ctx.dataset.agent_key, key_cache=KeyCache())
    return ctx.vault

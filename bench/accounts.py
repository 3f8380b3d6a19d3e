"""1,000 accounts × 5 secret fields: loaded, opened and shown (`Connection.accounts()`, the frame
`%decoy accounts` shows), against the machine's RSA limit — beside the same figure for memories,
measured in the same run on as many memory rows as there are fields.

Each field, like each memory row, costs its reader one RSA-OAEP unwrap (its `wrapped_key`) and
one AES-GCM open (its `ciphertext`), so both are counted in opened items a second and divided by
(a), bench/unwrap.py's `machine_limit`, measured on the very items just before and just after
(the faster counting), in three alternated rounds, each kind's median ratio counting. The figure
is accounts' ratio ÷ memories' ratio: 1.0 is "the same ratio to the machine's RSA limit as
memories do"; the target allows the host's drift (≥ 0.9).

Beside it, the CPU each kind spends per item, both ends counted (the sandbox's server thread
apart): with every core busy, a kind's ratio can reach at most (a)'s CPU per unwrap ÷ its own,
so memories' CPU per item ÷ accounts' bounds the figure whatever the threads do — what one
request per account costs on this stack, measured in the same run.

Staging: the accounts and fields are written into the sandbox's store as a client would have
sent them (an owner ENVELOPE record; per field a fresh key, its VAULT ciphertext, an owner wrap
and this connection's wrap) — the load measured is over real HTTP. The memories are sealed and
POSTed as bench/large.py does. Run alone: `python -m bench.accounts [--quick]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .context import Context
from .data import FULL, QUICK, generate
from .report import Figure, check, cpu_count, info, missing, table
from .unwrap import rsa_limit_around

ACCOUNTS, FIELDS = 1_000, 5
NEED = 0.9  # accounts' ratio ÷ memories' ratio: the same, less the host's drift
REPEATS = 3  # rounds of both, alternated; each kind's median ratio counts (this host drifts by half in a minute)
NAME = "accounts: 1,000 × 5 fields shown, vs memories (ratio to the RSA limit)"


def stage_accounts(sb: Any, conn: Any, accounts: int, fields: int, workers: int) -> list[dict]:
    """`accounts` accounts of `fields` fields each, created by `conn`, written to the store as
    sent; the fields as this connection is served them (for the RSA limit beside the figure)."""
    from decoy_lab.recipes import account_records as records
    from decoy_lab.recipes import sealing
    from decoy_lab.sandbox.stores import acctstore as acs
    from decoy_lab.wire import layouts as wire
    from decoy_lab.wire.crypto import random_key

    owner_pk, mine = sb.state.owner.key.public_key_b64, conn.agent_key.public_key_b64
    now = sb.state.now()

    def one(i: int) -> tuple[dict, list[dict]]:
        account_id = str(uuid.uuid4())
        record = {"name": f"Service {i:04d}", "username": f"user{i}@example.test"}
        account = {
            "id": account_id,
            "encrypted_data": wire.b64encode(records.seal_account_record(record, owner_pk)),
            "blob_mode": "envelope",
            "created_by_token_id": conn.token_id,
            "created_at": now + i * 1e-3,
            "updated_at": now,
            "fields_rev": fields,
        }
        made = []
        for j in range(fields):
            key, fid = random_key(), str(uuid.uuid4())
            plain = {"id": fid, "account_id": account_id, "fieldType": "concealed-string", "label": f"Key {j}"}
            made.append(
                {
                    "id": fid,
                    "account_id": account_id,
                    "kid": wire.kid(key),
                    "ciphertext": wire.b64encode(records.seal_field(key, {**plain, "value": f"sk-{i}-{j}"})),
                    "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, owner_pk)),
                    "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, mine)),
                }
            )
        return account, made

    with ThreadPoolExecutor(max_workers=workers) as pool:
        staged = list(pool.map(one, range(accounts)))
    served = []
    with sb.state.store.tx() as con:
        for account, made in staged:
            acs.insert_account(con, **account)
            for n, f in enumerate(made):
                at = account["created_at"] + n * 1e-6
                acs.insert_field(
                    con,
                    id=f["id"],
                    account_id=f["account_id"],
                    kid=f["kid"],
                    ciphertext=f["ciphertext"],
                    owner_wrap=f["owner_wrap"],
                    writer_token=conn.token_id,
                    created_at=at,
                    updated_at=at,
                )
                acs.put_field_wrap(con, f["id"], conn.token_id, f["kid"], f["wrapped_key"], mine)
                served.append(f)
    return served


def _server_cpu() -> float:
    """CPU seconds the in-process sandbox's server thread has used (Linux; 0.0 elsewhere)."""
    thread = next((t for t in threading.enumerate() if t.name == "decoy-sandbox"), None)
    try:
        with open(f"/proc/self/task/{thread.native_id}/stat", encoding="ascii") as fh:  # type: ignore[union-attr]
            ticks = fh.read().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return 0.0
    return (int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK")


def _with_cpu(run: Any) -> Any:
    """`run()` → (seconds, items), also keeping the process's CPU and the server thread's share."""

    def timed() -> tuple[float, int, float, float]:
        cpu, server = time.process_time(), _server_cpu()
        seconds, items = run()
        return seconds, items, time.process_time() - cpu, _server_cpu() - server

    return timed


def measure(ctx: Context, accounts: int = ACCOUNTS, fields: int = FIELDS) -> list[Figure]:
    from decoy_lab.sandbox.checks import readcache

    from .stage import api_of, pair, same_pairing, start_sandbox, upload

    items = accounts * fields
    sb = start_sandbox(seed="none")
    try:
        ctx.say(f"staging {items:,} memory rows and {accounts:,} accounts × {fields} fields")
        mem = pair(sb, "bench memories")
        data = generate(mem.agent_key, mem.keys(), dataclasses.replace(ctx.sizes, memories=items,
                        topics=max(10, items // 100)), workers=ctx.workers)  # fmt: skip
        if upload(api_of(mem), data.batches) != len(data):
            return [missing(NAME, "", "the sandbox did not create every memory row")]
        sample = list(api_of(mem).request("GET", "/api/agent/context/memories")["memories"])[:items]
        acct = pair(sb, "bench accounts", ["account.create"])
        served_fields = stage_accounts(sb, acct, accounts, fields, ctx.workers)

        def memories_load() -> tuple[float, int]:
            readcache.of(sb.state).clear()  # a cold load meets a server that kept nothing for it
            fresh = same_pairing(mem, profile=None)  # nothing read yet: no key or row kept from before
            t0 = time.perf_counter()
            vault = fresh.load()
            seconds = time.perf_counter() - t0
            fresh.close()
            return seconds, len(vault.served)

        def accounts_shown() -> tuple[float, int]:
            book = acct.account_book
            book.fields_seen.clear()  # nothing read before: every field fetched and opened
            t0 = time.perf_counter()
            frame = acct.accounts()
            seconds = time.perf_counter() - t0
            opened = int(frame["fields"].sum())
            return seconds, opened

        runs: dict[str, list[tuple[float, float, float, str]]] = {"memories": [], "accounts": []}
        cpu: dict[str, list[tuple[float, float]]] = {"memories": [], "accounts": []}  # (ms per item, server's)
        for rep in range(REPEATS):  # alternated, so a drift of the host touches both alike
            ctx.say(f"round {rep + 1} of {REPEATS}: a cold memories load and the accounts frame, each between two (a)")
            (m_s, m_rows, m_cpu, m_srv), limit, how = rsa_limit_around(
                ctx, sample, mem.agent_key.private_key, _with_cpu(memories_load)
            )
            runs["memories"].append(((m_rows / m_s) / limit, m_rows / m_s, limit, how))
            cpu["memories"].append((m_cpu * 1e3 / m_rows, m_srv * 1e3 / m_rows))
            (a_s, a_fields, a_cpu, a_srv), limit, how = rsa_limit_around(
                ctx, served_fields[: len(sample)], acct.agent_key.private_key, _with_cpu(accounts_shown)
            )
            cpu["accounts"].append((a_cpu * 1e3 / max(a_fields, 1), a_srv * 1e3 / max(a_fields, 1)))
            if a_fields != items:
                return [missing(NAME, "", f"the frame opened {a_fields:,} of {items:,} fields")]
            runs["accounts"].append(((a_fields / a_s) / limit, a_fields / a_s, limit, how))
        (m_ratio, m_rate, m_limit, m_how), (a_ratio, a_rate, a_limit, a_how) = (
            sorted(runs["memories"])[REPEATS // 2],
            sorted(runs["accounts"])[REPEATS // 2],
        )
        spread = {k: ", ".join(f"{r[0]:.2f}" for r in v) for k, v in runs.items()}
        figure = a_ratio / m_ratio
        per = {k: sorted(v)[REPEATS // 2] for k, v in cpu.items()}  # median CPU per item, server's with it
        bound = per["memories"][0] / per["accounts"][0]
        return [
            info(
                "memories: cold load",
                m_rate,
                "rows/s",
                f"{m_ratio:.2f} of the RSA limit, median of {spread['memories']} ({m_limit:,.0f}/s; {m_how})",
            ),
            info(
                "accounts: frame shown",
                a_rate,
                "fields/s",
                f"{a_ratio:.2f} of the RSA limit, median of {spread['accounts']} ({a_limit:,.0f}/s; {a_how}); "
                f"{items / a_rate:.2f} s for {accounts:,} accounts",
            ),
            info(
                "accounts: CPU per field ÷ memories' per row",
                per["accounts"][0] / per["memories"][0],
                "×",
                f"both ends, median of {REPEATS}: {per['accounts'][0]:.3f} ms a field (the sandbox "
                f"{per['accounts'][1]:.3f}) against {per['memories'][0]:.3f} ms a row (the sandbox "
                f"{per['memories'][1]:.3f}); with every core busy the figure below can reach at most "
                f"{bound:.2f} × (one fields read per account: 001 reads no account's fields with another's)",
            ),
            check(
                NAME.replace("1,000 × 5", f"{accounts:,} × {fields}"),
                figure,
                "×",
                figure >= NEED,
                f"≥ {NEED:g} (the same ratio)",
                f"{a_ratio:.2f} ÷ {m_ratio:.2f}",
            ),
        ]
    finally:
        sb.stop()


def run(ctx: Context) -> list[Figure]:
    """In the suite (`python -m bench --only accounts`), at the suite's size (a tenth with --quick)."""
    if ctx.setup_error:  # offline, or no sandbox could be started: this needs one of its own
        return [missing(NAME, f"≥ {NEED:g} (the same ratio)", ctx.setup_error)]
    if ctx.quick:
        return measure(ctx, ACCOUNTS // 10, FIELDS)
    return measure(ctx)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accounts", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 accounts instead of 1,000")
    args = parser.parse_args(argv)
    ctx = Context(sizes=QUICK if args.quick else FULL, workers=cpu_count(), quick=args.quick)
    figures = run(ctx)
    print(table(figures, judge=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sending a failed rule's exchanges again: a `curl` line each, and `decoy-lab check --replay`.

    decoy-lab check --replay REPORT clean#7      # a sandbox staged as the check's, judged again
    DECOY_BASE_URL=http://127.0.0.1:8787 DECOY_TOKEN=… sh -c "$(the command)"

A row is sealed to its sandbox's owner key, so an exchange only reproduces in a sandbox with the
same owner key, seed (the demo vault's ids) and clock. `save` (report.py) keeps them beside the
report: the key in `REPORT.d/owner-key.pem` (0600; the check's throwaway, never a user's), each
named exchange's body in `REPORT.d/<scenario>-exchange-<N>.body` and what staged its connection
(the permissions it held then, its public key) in the report's `exchanges`. `replay` starts such
a sandbox behind the recording inspector, pairs a connection as the agent's was, sends the body
again and judges it by the rules that named it: the same verdict, or the difference, is printed.
For a sandbox of your own, `decoy-lab sandbox --owner-key REPORT.d/owner-key.pem` and a curl line
(`--data-binary @REPORT.d/…body`) do the same by hand.

The bearer token is never written out: the command reads it from `$DECOY_TOKEN` (pair an agent
with the sandbox and export its access token), and the base URL from `$DECOY_BASE_URL`. A JSON
body goes in a quoted here-doc (the shell expands nothing in it); any other body is one quoted
argument; a body saved beside the report is sent from its file. `-i` prints the answer's status line and headers, so the status can be compared with
the one recorded.

Everything in the line the agent chose (the method, the path and query, the Content-Type, the
body) is one `shlex.quote`d word: pasted into a shell, the line runs curl and nothing else. An
exchange that cannot be written so is not made a command at all; its line is a `#` comment that
says why: a method that is not an HTTP token (RFC 9110 §9.1: tchar only), or a target, header
or body holding a control character (a terminal would act on it, and the scorecard shows it
escaped, so a pasted line would not send the same bytes; a JSON body keeps its line breaks).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, Exchange, Run, short
from decoy_lab.text import escaped

HEREDOC = "DECOY_BODY"
OWNER_KEY = "owner-key.pem"  # the check's throwaway owner key, in the report's folder (0600)
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.6.2: a method is a token of tchar


def curl(x: Exchange, body_file: str | None = None) -> str:
    """The command line that re-sends exchange `x` (one line, or a here-doc for a JSON body), or a
    `#` comment saying why it cannot be one. With `body_file` (where its body is saved, as typed
    here) the body is sent from that file: one short line whatever the body."""
    if TOKEN.fullmatch(x.method) is None:
        return f"# not reproduced: the method {escaped(repr(x.method))} is not an HTTP token (RFC 9110 §9.1)"
    target = x.path + (f"?{x.query}" if x.query else "")
    if _controls(target):
        return f"# not reproduced: the request target {escaped(repr(target))} holds a control character"
    words = ["curl", "-sS", "-i", "-X", shlex.quote(x.method), f'"$DECOY_BASE_URL"{shlex.quote(target)}']
    if x.token:
        words += ["-H", '"Authorization: Bearer $DECOY_TOKEN"']
    if not x.body:
        return " ".join(words)
    content_type = x.content_type or "application/json"
    if _controls(content_type):
        return f"# not reproduced: the Content-Type {escaped(repr(content_type))} holds a control character"
    words += ["-H", shlex.quote(f"Content-Type: {content_type}")]
    if body_file is not None:
        return " ".join([*words, "--data-binary", shlex.quote(f"@{body_file}")])
    text = _text(x.body)
    if text is None:
        return " ".join(words) + f"  # the {len(x.body)}-byte body is not text: send it from a file"
    if _is_json(text) and HEREDOC not in text and not _controls(text.replace("\n", "")):
        return " ".join([*words, "--data-binary", "@-", f"<<'{HEREDOC}'"]) + f"\n{text}\n{HEREDOC}"
    if _controls(text):
        return " ".join(words) + f"  # the {len(x.body)}-byte body holds control characters: send it from a file"
    return " ".join([*words, "--data-binary", shlex.quote(text)])


def _controls(text: str) -> bool:
    """Whether `text` holds anything the scorecard shows escaped (a control, bidi, surrogate)."""
    return escaped(text) != text


def folder_of(report: Path) -> Path:
    """The folder beside a report that holds its exchanges' bodies and owner key: `REPORT.d`."""
    return report.with_name(report.name + ".d")


def shown_path(path: Path) -> str:
    """`path` as a person would type it here: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def key_of(scenario: str, exchange_id: int) -> str:
    """How a report and `--replay` name an exchange: `clean#7`."""
    return f"{scenario}#{exchange_id}"


def body_name(scenario: str, exchange_id: int) -> str:
    """The file an exchange's body is saved in, in the report's folder."""
    return f"{SAFE_NAME.sub('_', scenario)}-exchange-{exchange_id}.body"


SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def reproducers(run: Run, ids: list[int], folder: Path | None = None) -> list[dict[str, Any]]:
    """For each exchange id of `run`: what it was, the status recorded, its body's size (and
    file, once saved in `folder`) and the curl that re-sends it."""
    by_id = {x.id: x for x in run.exchanges}
    out = []
    for i in ids:
        if i not in by_id:
            continue
        x = by_id[i]
        saved = folder is not None and bool(x.body)
        shown = shown_path(folder / body_name(run.scenario, i)) if saved and folder is not None else None
        out.append(
            {
                "scenario": run.scenario,
                "id": i,
                "key": key_of(run.scenario, i),
                "exchange": x.label(),
                "status": x.status,
                "bytes": len(x.body),
                "file": body_name(run.scenario, i) if saved else None,
                "body": shown,
                "curl": curl(x, shown),
            }
        )
    return out


def write_bodies(run: Run, ids: list[int], folder: Path) -> None:
    """Save the body of each exchange of `ids` that has one, as the agent sent it, in `folder`."""
    by_id = {x.id: x for x in run.exchanges}
    for i in ids:
        if i in by_id and by_id[i].body:
            (folder / body_name(run.scenario, i)).write_bytes(by_id[i].body)


def records(run: Run, ids: list[int], folder: Path) -> list[dict[str, Any]]:
    """What replays each exchange of `ids`: the request (its body by file name in `folder`), when
    it was sent, and how the agent's connection stood then (`connection`)."""
    by_id = {x.id: x for x in run.exchanges}
    return [
        {
            "key": key_of(run.scenario, i),
            "scenario": run.scenario,
            "id": i,
            "method": by_id[i].method,
            "path": by_id[i].path,
            "query": by_id[i].query,
            "content_type": by_id[i].content_type,
            "token": bool(by_id[i].token),
            "status": by_id[i].status,
            "at": round(by_id[i].start, 3),
            "body": body_name(run.scenario, i) if by_id[i].body else None,
            "bytes": len(by_id[i].body),
            **connection(run, by_id[i]),
        }
        for i in ids
        if i in by_id
    ]


def connection(run: Run, x: Exchange) -> dict[str, Any]:
    """How the agent's connection stood when it sent `x`: the public key it paired with and the
    permissions it held (what it asked at pairing, as the scenario's owner approved it, and each
    grant request answered before `x`)."""
    from decoy_lab.conformance.scenarios import SCENARIOS

    asked: list[dict] = []
    key = None
    for d in run.exchanges:
        if d.method == "POST" and d.path == "/oauth/device" and d.id < x.id:
            body = d.request if isinstance(d.request, dict) else _form_json(d.form)
            rows = body.get("authorization_details")
            asked = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
            key = body.get("agent_public_key") if isinstance(body.get("agent_public_key"), str) else None
    scenario = SCENARIOS.get(run.scenario)
    granted = (scenario.rows_for(asked) if scenario is not None else None) or asked
    for g in run.exchanges:
        if g.method == "POST" and g.path == GRANT_REQUEST and g.id < x.id and g.status is not None and g.status < 300:
            body = g.request if isinstance(g.request, dict) else {}
            if isinstance(body.get("permissions"), list):
                granted = [*granted, {"permissions": body["permissions"]}]
    return {"permissions": granted, "agent_public_key": key}


GRANT_REQUEST = "/api/agent/grant-request"


def _form_json(form: dict[str, str]) -> dict[str, Any]:
    """A form-encoded device authorization, its JSON fields parsed."""
    out: dict[str, Any] = dict(form)
    try:
        out["authorization_details"] = json.loads(form.get("authorization_details") or "[]")
    except ValueError:
        out["authorization_details"] = []
    return out


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class ReplayError(Exception):
    """A replay that cannot start (no such report, exchange or owner key): `error: …`, exit 2."""


def replay(report: Path | str, which: str, *, out: TextIO, agent_key: bytes | None = None) -> int:
    """Send exchange `which` (`clean#7`, or `7` when one scenario has it) of the saved `report`
    again, in a sandbox staged as the check's, and judge it by the rules that named it. Prints
    the answer, each row as the owner's app sees it and each rule's verdict beside the report's;
    1 when a rule fails again, else 0. Raises ReplayError for a report it cannot replay."""
    from decoy_lab.conformance.rules import BY_ID
    from decoy_lab.conformance.rules.base import opened_rows

    path = Path(report)
    doc = _load(path)
    key = _pick(doc.get("exchanges") or {}, which, path)
    rec = doc["exchanges"][key]
    staging = doc.get("staging") or {}
    folder = folder_of(path)
    key_file = folder / str(staging.get("owner_key") or OWNER_KEY)
    try:
        owner_pem = key_file.read_bytes()
        body = (folder / rec["body"]).read_bytes() if rec.get("body") else b""
    except OSError as exc:
        raise ReplayError(
            f"{shown_path(key_file.parent)}: {exc.strerror or exc} (the report's folder is needed)"
        ) from None
    scenario = rec["scenario"]
    seed = (staging.get("seeds") or {}).get(scenario, "demo")
    epoch = float((staging.get("clocks") or {}).get(scenario) or time.time())
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    w = lambda line: out.write(escaped(line) + "\n")  # noqa: E731
    w(f"replay {key} of {shown_path(path)}: {rec['method']} {rec['path']} ({rec.get('bytes', 0):,} bytes)")
    w(
        f"  in a sandbox staged as the check's: its owner key, seed {seed}, clock from {started} + {rec.get('at', 0):g} s"
    )
    x, view = send_again(rec, body, owner_pem, seed, epoch + float(rec.get("at") or 0), agent_key)
    w(f"answered {x.status if x.status is not None else x.ended} (the check's: {rec.get('status')})")
    shown = list(opened_rows(x))
    if shown:
        w("rows, as the owner's app sees them:")
        for r in shown:
            why = f": {r.reason}" if r.reason and r.verdict != "readable" else ""
            kind = f"{r.kind} " if r.kind else ""
            w(f"  {kind}row {short(r.id)}: {r.verdict}{why}")
    run = Run(scenario, [x], view, exit_code=0)
    recorded = {r["id"]: r["status"] for r in doc.get("rules") or []}
    failed = False
    for rule_id in rec.get("rules") or []:
        rule = BY_ID.get(rule_id)
        if rule is None:
            w(f"{rule_id}: no such rule in this decoy_lab")
            continue
        result = rule.evaluate(run)
        then = recorded.get(rule_id, "")
        failed = failed or result.status == FAILED
        if result.status == NOT_EXERCISED:
            w(f"{rule_id}  NOT EXERCISED by this exchange alone (the report: {_mark(then)}):")
            w("  it judges the agent's exchanges together; check the agent again to see it")
            continue
        same = "as the report has it" if result.status == then else f"the report: {_mark(then)}"
        w(f"{rule_id}  {_mark(result.status)} ({same})")
        for e in result.evidence[:3]:
            w(f"  - {e}")
    return 1 if failed else 0


def _mark(status: str) -> str:
    """A status as the scorecard marks it: FAILED, NOT EXERCISED, …"""
    return status.upper().replace("-", " ")


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReplayError(f"{path}: {exc.strerror or exc}") from None
    except ValueError:
        raise ReplayError(f"{path}: not a decoy-lab check report (JSON)") from None
    if not isinstance(doc, dict) or "rules" not in doc:
        raise ReplayError(f"{path}: not a decoy-lab check report (no rules)")
    return doc


def _pick(exchanges: dict[str, Any], which: str, path: Path) -> str:
    if which in exchanges:
        return which
    if not exchanges:
        raise ReplayError(f"{path}: no exchange was saved (no rule failed or warned)")
    found = [k for k in exchanges if k.rsplit("#", 1)[-1] == which.lstrip("#")]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(exchanges)
    if found:
        raise ReplayError(f"exchange {which!r} is in several scenarios: give one of {', '.join(found)}")
    raise ReplayError(f"no exchange {which!r} in {path}: give one of {listed}")


def send_again(
    rec: dict[str, Any], body: bytes, owner_pem: bytes, seed: str, at: float, agent_key: bytes | None = None
) -> tuple[Exchange, list[dict]]:
    """Send the recorded request `rec` with `body` once more: a fresh sandbox with the owner key
    `owner_pem`, the seed and a clock at `at` (the epoch when the agent sent it), a connection
    paired as the agent's stood (`rec["permissions"]`, `rec["agent_public_key"]`), the recording
    inspector in front. The exchange as the rules read it (numbered as in the report) and the
    owner's view of every row after it."""
    import httpx

    from decoy_lab.conformance.recording import start_inspector
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.sandbox.testing import pair_agent

    began = time.time()
    clock: Callable[[], float] = lambda: at + (time.time() - began)  # noqa: E731
    sandbox = Sandbox.start(owner_key=owner_pem, seed=seed, approve="auto", clock=clock)
    try:
        headers = {"Content-Type": rec["content_type"]} if rec.get("content_type") else {}
        if rec.get("token"):
            paired = pair_agent(sandbox.url, rec.get("agent_public_key"), rec.get("permissions") or [], "replay")
            headers["Authorization"] = f"Bearer {paired['access_token']}"
        insp = start_inspector(sandbox.url, sandbox, agent_key=agent_key)
        try:
            target = f"{str(insp.url).rstrip('/')}{rec['path']}" + (f"?{rec['query']}" if rec.get("query") else "")
            with httpx.Client(timeout=30) as client:
                client.request(rec["method"], target, content=body or None, headers=headers)
            insp.settle(15.0)
            flows = insp.all_flows()
        finally:
            insp.close()
        view = sandbox.owner.app_view()
    finally:
        sandbox.stop()
    if not flows:
        raise ReplayError("the inspector recorded nothing: the request did not reach the sandbox")
    return dataclasses.replace(Exchange.of(flows[-1]), id=int(rec["id"])), view

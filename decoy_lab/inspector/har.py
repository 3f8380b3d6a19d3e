"""Record and replay: flows as HAR 1.2, a HAR read back as flows, a HAR served as an upstream.

`to_har(flows)` is the HTTP Archive 1.2 that browsers' devtools and HTTP Toolkit open: every
required field (log.version, creator, entries; each entry's startedDateTime, time, request,
response, cache, timings), bodies as recorded (ciphertext and wraps kept, secrets already
masked; binary bodies base64 with `encoding`), and what only the inspector knows under `_decoy`
(HAR's custom-field prefix): the flow's agent, how it ended, its rows and their verdicts, the real
body sizes. `read_har` gives the flows back. `ReplayApp` answers the requests of a recording as
its upstream did: the first unused exchange with the same method, path, query and body, else the
first unused with the same method and path, else 404 `NOT_RECORDED`. `resend` sends a recording's
requests again, in order, to any base URL (a replay, or a live server), to reproduce a report.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from decoy_lab.inspector import model
from decoy_lab.inspector.model import Body, Flow, Row, Timings

HAR_VERSION = "1.2"
CREATOR = "decoy_lab inspector"
SKIP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "host"}
)
DECODED = ("gzip", "x-gzip", "deflate")  # bodies the record holds decoded: replayed without the encoding


def _creator_version() -> str:
    try:  # the installed distribution's version (the package's top level sits above this layer)
        return metadata.version("decoy-lab")
    except metadata.PackageNotFoundError:
        return "0"


def _headers(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs]


def _content(body: Body, mime: str) -> dict[str, Any]:
    text = body.text
    out: dict[str, Any] = {"size": body.size, "mimeType": mime}
    if text is not None:
        out["text"] = text
    else:
        out["text"], out["encoding"] = base64.b64encode(body.data).decode("ascii"), "base64"
    return out


def _nonneg(a: float | None, b: float | None) -> float:
    return round(max(0.0, (b or 0.0) - (a or 0.0)), 3) if a is not None and b is not None else 0.0


def entry(flow: Flow, base: str, *, reveal: bool = False) -> dict[str, Any]:
    """One HAR entry for one flow (`base`: the upstream's URL, the host the request went to).
    The rows' opened text is left out unless `reveal`: a recording shared in a bug report carries
    ciphertext and verdicts, never what the keys opened (re-open it with the keys to see that)."""
    t = flow.timings
    sent = t.sent if t.sent is not None else t.start
    first = t.first_byte if t.first_byte is not None else (t.done if t.done is not None else sent)
    timings = {
        "blocked": -1,
        "dns": -1,
        "connect": -1,
        "ssl": -1,
        "send": _nonneg(t.start, sent),
        "wait": _nonneg(sent, first),
        "receive": _nonneg(first, t.done),
    }
    req_mime = flow.header("content-type") or ""
    resp_mime = flow.header("content-type", response=True) or ""
    request: dict[str, Any] = {
        "method": flow.method,
        "url": base.rstrip("/") + flow.url,
        "httpVersion": flow.http_version,
        "cookies": [],
        "headers": _headers(flow.request_headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(flow.query, keep_blank_values=True)],
        "headersSize": -1,
        "bodySize": flow.request_body.size,
    }
    if flow.request_body.size or flow.request_body.data:
        post = _content(flow.request_body, req_mime)
        request["postData"] = {"mimeType": req_mime, "text": post["text"], "params": []}
        if "encoding" in post:
            request["postData"]["_encoding"] = "base64"
    response = {
        "status": flow.status or 0,
        "statusText": "",
        "httpVersion": flow.http_version,
        "cookies": [],
        "headers": _headers(flow.response_headers),
        "content": _content(flow.response_body, resp_mime),
        "redirectURL": flow.header("location", response=True) or "",
        "headersSize": -1,
        "bodySize": flow.response_body.size,
    }
    decoy = {k: v for k, v in flow.to_dict().items() if k not in ("request", "response")}
    if not reveal:
        decoy["rows"] = [{**r, "text": None} for r in decoy["rows"]]
    decoy["request_body"] = {k: v for k, v in flow.request_body.to_dict().items() if k not in ("text", "base64")}
    decoy["response_body"] = {k: v for k, v in flow.response_body.to_dict().items() if k not in ("text", "base64")}
    return {
        "startedDateTime": flow.started_iso(),
        "time": round(sum(v for v in timings.values() if v > 0), 3),
        "request": request,
        "response": response,
        "cache": {},
        "timings": timings,
        "_decoy": decoy,
    }


def to_har(
    flows: Iterable[Flow], *, upstream: str = "http://upstream", inspector: str | None = None, reveal: bool = False
) -> dict:
    """The HAR 1.2 document of these flows (secrets as they were recorded: masked unless revealed;
    the rows' opened text only with `reveal`)."""
    return {
        "log": {
            "version": HAR_VERSION,
            "creator": {"name": CREATOR, "version": _creator_version()},
            "pages": [],
            "entries": [entry(f, upstream, reveal=reveal) for f in flows],
            "_decoy": {"upstream": upstream, "inspector": inspector},
        }
    }


def write_har(path: str | Path, flows: Iterable[Flow], **kw: Any) -> Path:
    """Write the HAR to `path` (through a temporary file, so a reader never sees half of it)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(to_har(flows, **kw), ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


class HarWriter:
    """A HAR written as the exchanges finish, so a long run holds none of them for it: `add(flow)`
    appends the flow's entry to `<path>.part`; `close()` ends the document and renames it to
    `path` (a reader never sees half of one). Entries come in the order the flows finished."""

    def __init__(self, path: str | Path, *, upstream: str, inspector: str | None = None, reveal: bool = False):
        self.path = Path(path)
        self.upstream, self.inspector, self.reveal = upstream, inspector, reveal
        self.count = 0
        self._tmp = self.path.with_name(self.path.name + ".part")
        self._file: Any = self._tmp.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        head = {"version": HAR_VERSION, "creator": {"name": CREATOR, "version": _creator_version()}, "pages": []}
        self._file.write(json.dumps({"log": head})[:-2] + ', "entries": [\n')

    def __repr__(self) -> str:
        return f"<HarWriter {self.path}: {self.count} entries{'' if self._file else ', closed'}>"

    def add(self, flow: Flow) -> None:
        text = json.dumps(entry(flow, self.upstream, reveal=self.reveal), ensure_ascii=False)
        with self._lock:
            if self._file is None:
                return
            self._file.write((",\n" if self.count else "") + text)
            self._file.flush()
            self.count += 1

    def abandon(self) -> None:
        """Close and remove the unfinished file (the inspector did not start)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
                self._tmp.unlink(missing_ok=True)

    def close(self) -> Path:
        with self._lock:
            if self._file is not None:
                tail = json.dumps({"upstream": self.upstream, "inspector": self.inspector})
                self._file.write(f'\n], "_decoy": {tail}}}}}\n')
                self._file.close()
                self._file = None
                self._tmp.replace(self.path)
        return self.path


def load_har(source: str | Path | dict) -> dict:
    if isinstance(source, dict):
        return source
    try:
        doc = json.loads(Path(source).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{source}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{source}: not a HAR file this inspector can read ({exc})") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("log"), dict)
        or not isinstance(doc["log"].get("entries"), list)
    ):
        raise ValueError(f"{source}: not a HAR file (no log.entries)")
    return doc


def _body(text: str | None, encoded: bool, meta: dict | None) -> Body:
    data = base64.b64decode(text or "") if encoded else (text or "").encode("utf-8")
    meta = meta or {}
    return Body(data, int(meta.get("size", len(data))), bool(meta.get("truncated")), bool(meta.get("complete", True)))


def _started(text: str) -> float:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return 0.0


def flow_of(i: int, e: dict) -> Flow:
    """A flow back from one HAR entry (any HAR: `_decoy` fills in what only the inspector knows)."""
    req, resp, extra = e.get("request") or {}, e.get("response") or {}, e.get("_decoy") or {}
    url = urlsplit(req.get("url") or "/")
    post = req.get("postData") or {}
    content = resp.get("content") or {}
    t = extra.get("timings") or {}
    flow = Flow(
        int(extra.get("id") or i),
        str(req.get("method") or "GET"),
        url.path or "/",
        url.query,
        status=int(resp["status"]) if resp.get("status") else None,
        request_headers=[(h["name"], h["value"]) for h in req.get("headers") or []],
        response_headers=[(h["name"], h["value"]) for h in resp.get("headers") or []],
        request_body=_body(post.get("text"), post.get("_encoding") == "base64", extra.get("request_body")),
        response_body=_body(content.get("text"), content.get("encoding") == "base64", extra.get("response_body")),
        timings=Timings(float(t.get("start") or 0.0), t.get("sent"), t.get("first_byte"), t.get("done")),
        started=_started(str(e.get("startedDateTime") or "")),
        agent=str(extra.get("agent") or ""),
        token=str(extra.get("token") or ""),
        token_id=str(extra.get("token_id") or ""),
        ended=str(extra.get("ended") or "answered"),
        reason=str(extra.get("reason") or ""),
        http_version=str(req.get("httpVersion") or "HTTP/1.1"),
        notes=[n for n in extra.get("notes") or [] if isinstance(n, str)],
    )
    if "done" not in t:
        flow.timings.done = float(e.get("time") or 0.0)
    flow.rows = [Row(**{k: r.get(k, "") for k in _ROW_FIELDS}) for r in extra.get("rows") or [] if isinstance(r, dict)]
    for row in flow.rows:
        row.text = row.text or None
    return flow


_ROW_FIELDS = ("id", "field", "verdict", "reason", "problem", "text", "kind", "kid", "opened_by", "certainty")


def read_har(source: str | Path | dict) -> list[Flow]:
    """A flow per entry; an entry that cannot be read as one is kept as a flow saying why (its
    place and the count stay true), and never stops the others."""
    flows = [_read_entry(i, e) for i, e in enumerate(load_har(source)["log"]["entries"], 1)]
    taken = {f.id for f in flows if f.ended != model.UNREAD}
    for f in flows:  # an unreadable entry is numbered by its place, unless a recorded flow has that id
        if f.ended == model.UNREAD and f.id in taken:
            f.id = max(taken) + 1
        taken.add(f.id)
    return flows


def _read_entry(i: int, entry: Any) -> Flow:
    why = "not a JSON object"
    if isinstance(entry, dict):
        try:
            return flow_of(i, entry)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a field of the wrong type or shape
            why = f"{type(exc).__name__}: {exc}"
    note = f"error: entry {i} of the recording cannot be read as an exchange ({why})"
    return Flow(i, "?", "?", ended=model.UNREAD, reason=why, notes=[note])


class ReplayApp:
    """An ASGI app answering the requests of a recording as its upstream did (see the module)."""

    def __init__(self, flows: Iterable[Flow]):
        self.flows = list(flows)
        self._used: set[int] = set()
        self.served: list[tuple[str, int | None]] = []  # (request line, flow id that answered it)

    def __repr__(self) -> str:
        return f"<ReplayApp {len(self._used)}/{len(self.flows)} answered>"

    def match(self, method: str, path: str, query: str, body: bytes) -> Flow | None:
        for exact in (True, False):
            for f in self.flows:
                if f.id in self._used or f.method != method or f.path != path:
                    continue
                if exact and (f.query != query or f.request_body.data != body):
                    continue
                self._used.add(f.id)
                return f
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        flow = self.match(scope["method"], path, query, body)
        self.served.append((f"{scope['method']} {path}", flow.id if flow else None))
        if flow is None:
            status, headers, data = 404, [("content-type", "application/json")], _refusal(scope["method"], path)
        elif flow.status is None:
            status, headers = 502, [("content-type", "application/json")]
            data = json.dumps(
                {"error": "NO_ANSWER", "code": "NO_ANSWER", "message": f"recorded: {flow.ended}"}
            ).encode()
        else:
            status, data = flow.status, flow.response_body.data
            headers = [(k, v) for k, v in flow.response_headers if k.lower() not in SKIP_HEADERS]
            if (flow.header("content-encoding", response=True) or "").strip().lower() in DECODED:
                headers = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
            headers.append(
                ("x-decoy-replay", f"flow {flow.id}" + (", truncated" if flow.response_body.truncated else ""))
            )
        headers.append(("content-length", str(len(data))))
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": data, "more_body": False})


def _refusal(method: str, path: str) -> bytes:
    message = f"the recording has no unanswered {method} {path}"
    return json.dumps({"error": "NOT_RECORDED", "code": "NOT_RECORDED", "message": message}).encode()


def resend(flows: Iterable[Flow], base_url: str, *, timeout: float = 30.0) -> list[httpx.Response]:
    """Send each recorded request again, in order, to `base_url`; the answers, in order."""
    out = []
    with httpx.Client(base_url=base_url, timeout=timeout, trust_env=False) as client:
        for f in flows:
            headers = [(k, v) for k, v in f.request_headers if k.lower() not in SKIP_HEADERS]
            url = f.path + (f"?{f.query}" if f.query else "")
            out.append(client.request(f.method, url, headers=headers, content=f.request_body.data))
    return out

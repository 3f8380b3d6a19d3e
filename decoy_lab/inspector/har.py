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

A recording holds what the agent sent and what the server answered: both writers create the file
0600 from the start (`os.open`, never a chmod after). A recording read back is untrusted: it is
parsed with a depth bound (orjson, `MAX_DEPTH`), so one nested too deep is refused with a
`WireFormatError` naming the entry, before anything recurses into it; every member read from an
entry is checked for its shape, and an entry that is not an exchange (no `request` or `response`
object, a member of the wrong shape) is a flow saying why, in its place — or, with
`read_har(strict=True)`, a `WireFormatError` naming it.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import threading
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import orjson

from decoy_lab.errors import WireFormatError
from decoy_lab.inspector import flow_record
from decoy_lab.inspector.flow_record import Body, Flow, Row, Timings
from decoy_lab.inspector.lifespan import answer_lifespan
from decoy_lab.shapes import fits, json_kind, shape_name

HAR_VERSION = "1.2"
CREATOR = "decoy_lab inspector"
SKIP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "host"}
)
DECODED = ("gzip", "x-gzip", "deflate")  # bodies the record holds decoded: replayed without the encoding
MAX_DEPTH = 1024  # levels of nesting a recording may have: orjson's bound, refused before recursing


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


def create_private(path: Path) -> IO[str]:
    """A new text file at `path`, created 0600 (os.open: readable by its user only from its first
    byte, whatever the umask); a file left there by an earlier run is removed first, so its mode
    is never inherited, and a symbolic link there is never followed."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


def write_har(path: str | Path, flows: Iterable[Flow], **kw: Any) -> Path:
    """Write the HAR to `path`, 0600 (through a temporary file, so a reader never sees half of it)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    text = json.dumps(to_har(flows, **kw), ensure_ascii=False, indent=1)
    with create_private(tmp) as fh:
        fh.write(text)
    tmp.replace(path)
    return path


class HarWriter:
    """A HAR written as the exchanges finish, so a long run holds none of them for it: `add(flow)`
    appends the flow's entry to `<path>.part`; `close()` ends the document and renames it to
    `path` (a reader never sees half of one), 0600 from its creation. Entries come in the order
    the flows finished."""

    def __init__(self, path: str | Path, *, upstream: str, inspector: str | None = None, reveal: bool = False):
        self.path = Path(path)
        self.upstream, self.inspector, self.reveal = upstream, inspector, reveal
        self.count = 0
        self._tmp = self.path.with_name(self.path.name + ".part")
        self._file: Any = create_private(self._tmp)
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
    """The HAR document of `source` (a path, or a document already read). A file that is not
    JSON, nested deeper than `MAX_DEPTH` or not a HAR (no `log.entries` list) is a WireFormatError
    (a ValueError); one that is not there, or cannot be opened, a ValueError."""
    if isinstance(source, dict):
        doc: Any = source
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ValueError(f"{source}: no such file") from None
        except UnicodeDecodeError as exc:
            raise _not_har(source, f"not UTF-8 text ({exc.reason})", offset=exc.start) from None
        except OSError as exc:
            raise ValueError(f"{source}: not a HAR file this inspector can read ({exc})") from None
        doc = parse_json(text, source)
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("log"), dict)
        or not isinstance(doc["log"].get("entries"), list)
    ):
        raise _not_har(source, "not a HAR file (no log.entries)", field="log.entries")
    return doc


def parse_json(text: str, source: Any = "the recording") -> Any:
    """`text` parsed with a depth bound: orjson refuses nesting past `MAX_DEPTH` before building
    anything (a WireFormatError naming where, by entry when it is in one); what orjson refuses
    that the json module reads (NaN, a lone surrogate) is read by json, its RecursionError caught."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg or "recursion" in exc.msg:
            raise _too_deep(text, exc.pos, source) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise _not_har(source, f"the recording is nested more than {MAX_DEPTH} levels deep: not read") from None
    except ValueError as exc:
        raise _not_har(
            source, f"not a HAR file this inspector can read ({exc})", offset=getattr(exc, "pos", None)
        ) from None


def _not_har(source: Any, message: str, *, field: str | None = None, offset: int | None = None) -> WireFormatError:
    return WireFormatError(f"{source}: {message}", field=field, offset=offset, kind="HAR")


# A JSON token that matters to the nesting: a whole string (keys among them) or a structural mark.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')


def _path_at(text: str, pos: int) -> list[str | int]:
    """The keys and indexes of the containers open at `pos` in `text`. It only says where a parse
    that stopped there was (for the message): what is read is judged by the parser alone."""
    path: list[str | int] = []
    arrays: list[bool] = []
    last = ""
    for match in _TOKEN.finditer(text, 0, pos):
        token = match.group()
        if token in ("{", "["):
            arrays.append(token == "[")
            path.append(0 if token == "[" else "")
        elif token in ("}", "]"):
            if arrays:
                arrays.pop()
                path.pop()
        elif token == ",":
            if arrays and arrays[-1]:
                path[-1] = int(path[-1]) + 1
        elif token == ":":
            if arrays and not arrays[-1]:
                try:
                    path[-1] = str(json.loads(last))
                except ValueError:
                    path[-1] = last[1:-1]
        else:
            last = token
    return path


def _field(path: list[str | int], shown: int = 4) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:shown]).lstrip(".")
    return text + ("…" if len(path) > shown else "")


def _too_deep(text: str, pos: int, source: Any) -> WireFormatError:
    path = _path_at(text, pos)
    deep = f"nested more than {MAX_DEPTH} levels deep: the recording is not read"
    if path[:2] == ["log", "entries"] and len(path) > 2 and isinstance(path[2], int):
        where = f"entry {path[2] + 1} of the recording is {deep}"
        return _not_har(source, where, field=_field(path[3:]) or None, offset=pos)
    return _not_har(source, f"the recording is {deep}", field=_field(path) or None, offset=pos)


class _Shape(Exception):
    """A member of an entry that is missing or of the wrong shape (`field` names it)."""

    def __init__(self, field: str, why: str):
        super().__init__(why)
        self.field = field


def _member(obj: dict, key: str, shape: Any, where: str = "", *, required: bool = False) -> Any:
    """`obj[key]` when it has `shape`; None when it is absent or null (unless `required`)."""
    value = obj.get(key)
    if value is None:
        if required:
            raise _Shape(where + key, f"it has no {where + key}")
        return None
    if not fits(value, shape):
        raise _Shape(where + key, f"its {where + key} is {json_kind(value)}, not {shape_name(shape)}")
    return value


def _headers_of(obj: dict, where: str) -> list[tuple[str, str]]:
    out = []
    for n, h in enumerate(_member(obj, "headers", list, where) or []):
        if not (isinstance(h, dict) and isinstance(h.get("name"), str) and isinstance(h.get("value"), str)):
            raise _Shape(f"{where}headers[{n}]", f"its {where}headers[{n}] is not a name and a value, both text")
        out.append((h["name"], h["value"]))
    return out


def _body(text: str | None, encoded: bool, meta: dict | None, where: str) -> Body:
    data = base64.b64decode(text or "") if encoded else (text or "").encode("utf-8")
    size = _member(meta or {}, "size", int, where)
    meta = meta or {}
    return Body(
        data, len(data) if size is None else size, bool(meta.get("truncated")), bool(meta.get("complete", True))
    )


def _started(text: str) -> float:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return 0.0


def flow_of(i: int, e: dict) -> Flow:
    """A flow back from one HAR entry (any HAR: `_decoy` fills in what only the inspector knows).
    An entry with no `request` or `response` object, or a member read of the wrong shape, raises
    `_Shape` naming it (read_har turns it into the entry's error)."""
    req = _member(e, "request", dict, required=True)
    resp = _member(e, "response", dict, required=True)
    extra = _member(e, "_decoy", dict) or {}
    url = urlsplit(_member(req, "url", str, "request.") or "/")
    post = _member(req, "postData", dict, "request.") or {}
    content = _member(resp, "content", dict, "response.") or {}
    t = _member(extra, "timings", dict, "_decoy.") or {}
    status = _member(resp, "status", int, "response.")
    flow = Flow(
        _member(extra, "id", int, "_decoy.") or i,
        _member(req, "method", str, "request.") or "GET",
        url.path or "/",
        url.query,
        status=status or None,
        request_headers=_headers_of(req, "request."),
        response_headers=_headers_of(resp, "response."),
        request_body=_body(
            _member(post, "text", str, "request.postData."),
            post.get("_encoding") == "base64",
            _member(extra, "request_body", dict, "_decoy."),
            "_decoy.request_body.",
        ),
        response_body=_body(
            _member(content, "text", str, "response.content."),
            content.get("encoding") == "base64",
            _member(extra, "response_body", dict, "_decoy."),
            "_decoy.response_body.",
        ),
        timings=Timings(
            float(_member(t, "start", float, "_decoy.timings.") or 0.0),
            *(_member(t, k, float, "_decoy.timings.") for k in ("sent", "first_byte", "done")),
        ),
        started=_started(_member(e, "startedDateTime", str) or ""),
        agent=_member(extra, "agent", str, "_decoy.") or "",
        token=_member(extra, "token", str, "_decoy.") or "",
        token_id=_member(extra, "token_id", str, "_decoy.") or "",
        ended=_member(extra, "ended", str, "_decoy.") or "answered",
        reason=_member(extra, "reason", str, "_decoy.") or "",
        http_version=_member(req, "httpVersion", str, "request.") or "HTTP/1.1",
        notes=[n for n in _member(extra, "notes", list, "_decoy.") or [] if isinstance(n, str)],
    )
    if "done" not in t:
        flow.timings.done = float(_member(e, "time", float) or 0.0)
    rows = [r for r in _member(extra, "rows", list, "_decoy.") or [] if isinstance(r, dict)]
    flow.rows = [_row_of(r, f"_decoy.rows[{n}].") for n, r in enumerate(rows)]
    return flow


def _row_of(r: dict, where: str) -> Row:
    found: dict[str, Any] = {k: _member(r, k, str, where) or "" for k in _ROW_FIELDS}
    row = Row(**found)
    row.text = row.text or None
    return row


_ROW_FIELDS = ("id", "field", "verdict", "reason", "problem", "text", "kind", "kid", "opened_by", "certainty")


def read_har(source: str | Path | dict, *, strict: bool = False) -> list[Flow]:
    """A flow per entry. An entry that cannot be read as one is kept as a flow saying why (its
    place and the count stay true), and never stops the others — or, `strict`, is raised as a
    WireFormatError naming it. A document that is no HAR, or nested too deep, is always raised."""
    flows = [_read_entry(i, e, strict) for i, e in enumerate(load_har(source)["log"]["entries"], 1)]
    taken = {f.id for f in flows if f.ended != flow_record.UNREAD}
    for f in flows:  # an unreadable entry is numbered by its place, unless a recorded flow has that id
        if f.ended == flow_record.UNREAD and f.id in taken:
            f.id = max(taken) + 1
        taken.add(f.id)
    return flows


def _read_entry(i: int, entry: Any, strict: bool = False) -> Flow:
    why, field = "not a JSON object", None
    if isinstance(entry, dict):
        try:
            return flow_of(i, entry)
        except _Shape as exc:
            why, field = str(exc), exc.field
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # base64 that is not, a number too large
            why = f"{type(exc).__name__}: {exc}"
    error = WireFormatError(f"entry {i} of the recording cannot be read as an exchange ({why})", field=field)
    if strict:
        raise error
    return Flow(i, "?", "?", ended=flow_record.UNREAD, reason=why, notes=[f"error: {error}"])


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
            await answer_lifespan(receive, send)
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

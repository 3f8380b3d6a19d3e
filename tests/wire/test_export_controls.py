"""An exported script prints what it decrypted escaped: no ESC, BEL or C1 reaches the terminal.

The attack (Low): a memory's text holding `\\x1b]0;PWNED\\x07` was printed raw by the exported
script (`result: …`), retitling the user's terminal when they ran it. Now the script escapes
what it prints of the data (`shown`, the script's own copy of `decoy_lab.text.escaped`, which
keeps line breaks) and its JSON results stay JSON (`\\u009b`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

from decoy_lab.recipes import sealing
from decoy_lab.recipes.dump import open_blob
from decoy_lab.recipes.export import script_code
from decoy_lab.recipes.trace import Trace
from decoy_lab.text import escaped
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

HOSTILE = "Prefers window seats.\x1b]0;PWNED\x07\nsecond line \x9b2J\x7f\r\t\u202eend"
RAW = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) != "\n"]


def run(script: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-", *args], input=script.encode(), capture_output=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("utf-8")
    assert not any(c in out for c in RAW), repr(out)
    return out


def test_the_exported_script_prints_a_decrypted_escape_escaped(tmp_path):
    key = random_key()
    t = open_blob(sealing.seal_vault(key, HOSTILE.encode()), key=key)
    t.title = f"unseal {HOSTILE}"
    out = run(t.to_python(), {"DECOY_KEY": wire.b64encode(key)})
    assert out.endswith(f"result: {escaped(HOSTILE, newlines=True)}\n"), out
    assert "\\x1b]0;PWNED\\x07\nsecond line \\x9b2J\\x7f\\r\\t\\u202eend" in out, "readable, lines kept"
    data = json.loads(run(t.to_python(), {}, "--data"))  # --data prints the title escaped, and still JSON
    assert data["title"] == t.title


def test_a_json_result_is_escaped_and_still_the_same_json():
    key = random_key()
    t = Trace("space row")
    blob = sealing.seal_json(key, {"space_id": "s1", "row_id": "r1", "v": HOSTILE, HOSTILE: 1})
    sealing.open_space_row(blob, key, space_id="s1", row_id="r1", trace=t)
    out = run(t.to_python(reveal=True), {})
    assert "\\u009b2J\\u007f" in out
    assert json.loads(out.split("\nresult: ", 1)[1]) == {"space_id": "s1", "row_id": "r1", "v": HOSTILE, HOSTILE: 1}


def test_the_scripts_escaping_is_decoy_lab_text_escaped_for_every_character():
    _, code = script_code()
    helpers = code[code.index("def shown(") : code.index("def ok(")]
    ns: dict = {"unicodedata": unicodedata}
    exec(helpers, ns)  # the script's own helper, defined as the script defines it
    every = "".join(map(chr, range(0x110000)))
    assert ns["shown"](every) == escaped(every, newlines=True)

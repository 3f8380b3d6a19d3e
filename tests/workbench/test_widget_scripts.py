"""The anywidget scripts share one set of helpers (assets/common.js: `h`, `plural`, `perFrame`,
`listen`): each widget's `_esm` is that file followed by its own script (`widget_script`), and no
script writes a helper of its own again. The page-side `plural` writes what Python's does."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from decoy_lab.text import plural
from decoy_lab.widgets.flows import FlowsView
from decoy_lab.widgets.grid import MemoryGrid
from decoy_lab.widgets.html import ASSETS
from decoy_lab.widgets.stepper import Stepper
from decoy_lab.widgets.topicmap_view import TopicMapWidget

COMMON = ASSETS / "common.js"
HELPERS = re.findall(r"^function (\w+)\(", COMMON.read_text(encoding="utf-8"), re.M)
WIDGETS = {MemoryGrid: "grid.js", FlowsView: "flows.js", Stepper: "recipe.js", TopicMapWidget: "topicmap.js"}


def test_common_js_holds_the_helpers():
    assert HELPERS == ["h", "plural", "perFrame", "listen"]


@pytest.mark.parametrize("widget", WIDGETS, ids=lambda w: w.__name__)
def test_each_widget_script_is_the_common_helpers_then_its_own(widget):
    own = (ASSETS / WIDGETS[widget]).read_text(encoding="utf-8")
    assert str(widget._esm) == COMMON.read_text(encoding="utf-8") + "\n" + own
    assert own.count("export default") == 1


@pytest.mark.parametrize("script", sorted(WIDGETS.values()))
def test_no_widget_script_writes_a_shared_helper_again(script):
    own = (ASSETS / script).read_text(encoding="utf-8")
    again = [name for name in HELPERS if re.search(rf"\bfunction {name}\(|\b(?:const|let) {name}\b", own)]
    assert again == []


def test_the_pages_plural_writes_what_pythons_does():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    cases = [(0, "memory", "memories"), (1, "memory", "memories"), (1204, "memory", "memories"), (2, "row", None)]
    script = COMMON.read_text(encoding="utf-8") + (
        f"\nconsole.log(JSON.stringify({json.dumps(cases)}.map(([n, one, many]) => plural(n, one, many))));"
    )
    out = subprocess.run([node, "--input-type=module"], input=script, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [plural(n, one, many) for n, one, many in cases]

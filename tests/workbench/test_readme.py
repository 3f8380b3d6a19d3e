"""The README's first screen holds for a newcomer with this checkout: the commands it gives exist,
the notebooks it lists are the notebooks there are, every link it makes opens, and it promises no
package index entry or hosted badge a user of this checkout cannot reach."""

from __future__ import annotations

import re
from pathlib import Path

from decoy_lab.workbench import verbs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
START = README[: README.index("## In a notebook")]


def test_the_start_commands_exist_and_the_wheel_is_built_and_run_by_a_test():
    make = (ROOT / "Makefile").read_text()
    for target in ("lab", "test"):
        assert f"make {target}" in START and re.search(rf"^{target}:", make, re.M), target
    assert "python -m pip wheel --no-deps -w dist ." in START and "pip install dist/decoy_lab-*.whl" in START
    wheel_test = (ROOT / "tests" / "package" / "test_wheel.py").read_text()
    assert '"wheel", "--no-deps"' in wheel_test and '"decoy-lab", "--help"' in wheel_test


def test_no_promise_a_checkout_cannot_keep():
    assert "pip install decoy-lab" not in README  # no package index entry to install from
    assert "mybinder.org" not in README  # the badge pointed at a repository this checkout is not


def test_the_notebooks_listed_are_the_notebooks_there_are():
    listed = set(re.findall(r"^- `(\d\d-[a-z-]+)` — ", START, re.M))
    assert listed == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_the_tour_says_what_the_first_cells_show():
    """The first screen says the memories take a few seconds and `--wait` waits: the first read
    after pairing is "on their way" (spec 000's `preparing`), as the notebook's own text says."""
    assert "`%decoy memories --wait` waits for them" in START
    tour = (ROOT / "notebooks" / "01-tour.ipynb").read_text()
    assert "df = %decoy memories --wait" in tour and 'approves\\n",\n    "asks at once' not in tour


def test_every_verb_the_notebook_table_names_exists():
    table = README[README.index("| sub-command |") : README.index("**The recipe view**")]
    for name in re.findall(r"^\| `(?:%%decoy )?([a-z-]+)", table, re.M):
        assert name in verbs.BY_NAME, name


def test_every_relative_link_opens():
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (doc.parent / target).exists(), (doc.name, target)
        for target, anchor in re.findall(r"\]\(([^)#:]*)#([^)]+)\)", doc.read_text(encoding="utf-8")):
            page = (doc.parent / target) if target else doc
            heads = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
            assert anchor in {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in heads}, anchor

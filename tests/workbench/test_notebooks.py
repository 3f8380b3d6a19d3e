"""Every notebook runs top to bottom against the embedded sandbox (nbclient, a real kernel);
its outputs hold what it promises, and no output carries secret material."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"

# Appended after the notebook's own cells: collects every secret the run could have leaked.
SECRETS_CELL = r"""
import json as _json, base64 as _b64
from decoy_lab.recipes import sealing as _s
from decoy_lab.wire import layouts as _w
_m = get_ipython().magics_manager.registry["DecoyMagics"]
_keys = [conn.agent_key]
if conn.sandbox_handle is not None:
    _keys.append(conn.sandbox_handle.owner.key)
_out = {"pem": [k.to_pem() for k in _keys], "tokens": [conn.tokens.access_token.reveal(), conn.tokens.refresh_token.reveal()],
        "memory_keys": [], "raw": list(globals().get("_raw_secrets", []))}
for _r in conn.load().served:
    try:
        _k = _s.unwrap_as_agent(_r["wrapped_key"], conn.agent_key)
    except Exception:
        continue
    _out["memory_keys"] += [_k.hex(), _w.b64encode(_k)]
print("SECRETS:" + _json.dumps(_out))
"""


def secrets_of(text: str) -> list[str]:
    """Strings that must appear in no output: PEM body lines, the DER as one base64 run,
    tokens, raw memory keys (hex and base64), and the raw secrets the notebook set (`raw`)."""
    data = json.loads(text.split("SECRETS:", 1)[1])
    out: list[str] = []
    for pem in data["pem"]:
        lines = [ln for ln in pem.splitlines() if ln and not ln.startswith("-----")]
        out += [ln for ln in lines if len(ln) >= 40]
        out.append("".join(lines)[:120])
        der = base64.b64decode("".join(lines))
        out.append(der.hex()[:64])
    out += [t for t in data["tokens"] if t]
    out += data["memory_keys"]
    out += [r for r in data.get("raw", []) if r]
    return out


def run(path: Path, tmp_path: Path, raw: str = "") -> nbformat.NotebookNode:
    """`raw`: an expression (in the notebook's names) listing secrets it set, scanned for too."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell((f"_raw_secrets = [{raw}]\n" if raw else "") + SECRETS_CELL))
    with pytest.MonkeyPatch.context() as mp:  # the kernel inherits it: no profile lands in $HOME
        mp.setenv("DECOY_LAB_CONFIG_DIR", str(tmp_path / "config"))
        NotebookClient(
            nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}, record_timing=False
        ).execute()
    executed = ROOT / "build" / "notebooks"  # the run's copy, to read; the tracked file stays as committed
    executed.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, executed / path.name)
    return nb


def outputs(cell) -> list[dict]:
    return list(cell.get("outputs", []))


def text_of(output: dict) -> str:
    return json.dumps(output, ensure_ascii=False)


def assert_no_secrets(nb: nbformat.NotebookNode) -> None:
    secret_cell = nb.cells[-1]
    printed = "".join(o.get("text", "") for o in outputs(secret_cell))
    secrets = secrets_of(printed)
    assert len(secrets) >= 6
    for cell in nb.cells[:-1]:
        for out in outputs(cell):
            blob = text_of(out)
            for s in secrets:
                assert s not in blob, f"secret material in the output of: {cell.source[:60]!r}"


def kinds(nb) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {"table": [], "png": [], "widget": [], "stepper": [], "error": []}
    for cell in nb.cells[:-1]:
        for out in outputs(cell):
            data = out.get("data", {})
            if out.get("output_type") == "error":
                found["error"].append(out)
            if "<table" in data.get("text/html", "") and "dataframe" in data.get("text/html", ""):
                found["table"].append(out)
            if "image/png" in data:
                found["png"].append(out)
            if WIDGET in data:
                found["widget"].append(out)
                if "decoy-trace" in data.get("text/html", ""):
                    found["stepper"].append(out)
    return found


def test_notebooks_are_committed_without_outputs():
    """Issue 22: "Store every notebook in notebooks/ without outputs and execution counts"."""
    from ipykernel.ipkernel import IPythonKernel

    from decoy_lab.workbench.notebook.clean import RUN_METADATA

    assert {p.name for p in NOTEBOOKS} >= {
        "01-tour.ipynb",
        "02-wire-formats.ipynb",
        "03-topic-map.ipynb",
        "04-both-sides.ipynb",
        "05-inspect-an-agent.ipynb",
        "06-accounts-and-secrets.ipynb",
    }
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        # byte for byte as Jupyter writes it: a save of the unchanged notebook leaves git status clean
        assert path.read_text() == nbformat.writes(nb, version=nbformat.NO_CONVERT) + "\n", path.name
        # the kernel's info as the project's kernel reports it: JupyterLab finds nothing to change
        reported = {k: v for k, v in IPythonKernel.language_info.items() if k != "version"}
        info = dict(nb.metadata.language_info)
        assert info.pop("version").rsplit(".", 1)[0] == "3.11" and info == reported, path.name
        assert nb.metadata.kernelspec == {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        }
        assert "widgets" not in nb.metadata, path.name
        for cell in nb.cells:
            assert not set(cell.metadata) & set(RUN_METADATA), (path.name, cell.get("id"))
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def run_copy_of(committed: str) -> nbformat.NotebookNode:
    """The committed notebook as a Run All leaves it in Lab: outputs, counts, run-time metadata."""
    nb = nbformat.reads(committed, as_version=4)
    for n, code in enumerate(code_cells(nb), 1):
        code.execution_count, code.metadata["execution"] = n, {"iopub.status.busy": "2026-12-02T13:00:00Z"}
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a run's output\n")]
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python"}
    return nb


def test_the_labs_save_keeps_tracked_notebooks_output_free_wherever_the_server_is_rooted(tmp_path):
    """What `make lab` gives JupyterLab (scripts/lab_config.py) through a real FileContentsManager:
    a run notebook saved into a checkout's notebooks/ is stored as committed whether the server is
    rooted at the checkout, at notebooks/ (as `make lab` roots it: it saves "/01-tour.ipynb") or
    above it; saved elsewhere, or in a folder named notebooks outside a checkout, it keeps its outputs."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from traitlets.config.loader import PyFileConfigLoader

    from decoy_lab.workbench.notebook import clean

    assert "--config=scripts/lab_config.py" in (ROOT / "Makefile").read_text()
    config = PyFileConfigLoader("lab_config.py", path=str(ROOT / "scripts")).load_config()
    clone = tmp_path / "clone"
    for part in ("pyproject.toml", "decoy_lab/__init__.py", "scripts/lab_config.py"):
        (clone / part).parent.mkdir(parents=True, exist_ok=True)
        (clone / part).write_text((ROOT / part).read_text())
    (clone / "notebooks").mkdir()
    (tmp_path / "elsewhere" / "notebooks").mkdir(parents=True)
    committed = (ROOT / "notebooks" / "01-tour.ipynb").read_text()
    for root, path in [
        (clone / "notebooks", "01-tour.ipynb"),  # make lab: rooted at notebooks/
        (clone / "notebooks", "/01-tour.ipynb"),  # the API path as the page sends it
        (clone, "notebooks/01-tour.ipynb"),  # jupyter lab in the checkout
        (tmp_path, "clone/notebooks/01-tour.ipynb"),  # jupyter lab above it
    ]:
        (clone / "notebooks" / "01-tour.ipynb").write_text(committed)  # Lab saves over the file it opened
        manager = FileContentsManager(config=config, root_dir=str(root))
        manager.save({"type": "notebook", "format": "json", "content": run_copy_of(committed)}, path)
        saved = nbformat.read(clone / "notebooks" / "01-tour.ipynb", as_version=4)
        assert saved == nbformat.reads(committed, as_version=4), (root, path)  # what is committed, as data
    manager = FileContentsManager(config=config, root_dir=str(tmp_path))
    for where in ("clone/notebooks/new.ipynb", "clone/scratch.ipynb", "elsewhere/notebooks/mine.ipynb"):
        manager.save({"type": "notebook", "format": "json", "content": run_copy_of(committed)}, where)
    new = nbformat.read(clone / "notebooks" / "new.ipynb", as_version=4)  # a new one there: no outputs either
    assert [c.outputs for c in code_cells(new)] == [[]] * len(code_cells(new))
    for kept in ("clone/scratch.ipynb", "elsewhere/notebooks/mine.ipynb"):  # the user's own keep them
        assert all(c.outputs for c in code_cells(nbformat.read(tmp_path / kept, as_version=4))), kept
    # a symlink into the checkout's notebooks/ is the tracked file it points at
    (tmp_path / "link").symlink_to(clone / "notebooks")
    assert clean.is_tracked(tmp_path / "link" / "01-tour.ipynb")
    assert not clean.is_tracked(tmp_path / "elsewhere" / "notebooks" / "mine.ipynb")


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "started",
    ["make lab", "jupyter lab in the checkout", "jupyter lab in notebooks/"],
)
def test_run_all_then_save_through_the_server_leaves_git_status_clean(tmp_path, started):
    """Issue: after Run All in `make lab`, all five notebooks were modified. A fresh clone (a copy
    of this checkout, committed), JupyterLab started as `make lab` starts it (rooted at notebooks/,
    its config) or by hand in the checkout or in notebooks/ (no config: the package's server
    extension installs the hook); each notebook saved with a run's outputs through the contents
    API: the files on disk hold none, and `git status --porcelain notebooks/` stays empty."""
    import httpx

    from support.lab import MAKE_LAB, MAKE_LAB_ARGS, checkout_copy, git_status, lab_in

    assert MAKE_LAB in (ROOT / "Makefile").read_text()  # the command below is make lab's
    clone = checkout_copy(tmp_path / "clone")
    cwd, args, prefix = {
        "make lab": (clone, MAKE_LAB_ARGS, ""),
        "jupyter lab in the checkout": (clone, (), "notebooks/"),
        "jupyter lab in notebooks/": (clone / "notebooks", (), ""),
    }[started]
    names = sorted(p.name for p in (clone / "notebooks").glob("*.ipynb"))
    assert len(names) >= 5 and git_status(clone, "notebooks/") == ""
    with lab_in(tmp_path, cwd, args=args) as (base, token):
        api = httpx.Client(base_url=f"{base}/api/contents/", headers={"Authorization": f"token {token}"}, timeout=30)
        if started == "make lab":  # rooted at notebooks/: the tour is at the root, no notebooks/ folder
            listing = api.get("").raise_for_status().json()
            assert {c["name"] for c in listing["content"]} >= set(names) and "notebooks" not in str(listing)
        for name in names:
            committed = (clone / "notebooks" / name).read_text()
            body = {"type": "notebook", "format": "json", "content": run_copy_of(committed)}
            api.put(prefix + name, json=body).raise_for_status()
            served = api.get(prefix + name).raise_for_status().json()["content"]
            assert all(c["outputs"] == [] for c in served["cells"] if c["cell_type"] == "code"), name
    for name in names:
        on_disk = nbformat.read(clone / "notebooks" / name, as_version=4)
        assert all(c.outputs == [] and c.execution_count is None for c in code_cells(on_disk)), name
    assert git_status(clone, "notebooks/") == ""


@pytest.mark.notebook
def test_tour_runs_and_shows_table_map_stepper_without_secrets(tmp_path):
    nb = run(ROOT / "notebooks" / "01-tour.ipynb", tmp_path)
    found = kinds(nb)
    assert not found["error"]
    assert found["table"], "the memories DataFrame"
    assert found["png"], "the topic map"
    assert found["stepper"], "the unseal stepper"
    assert len(found["widget"]) >= 4  # pairing, browser, stepper(s), consent card
    pairing = next(c for c in nb.cells if c.cell_type == "code" and "connect --sandbox" in c.source)
    assert any(WIDGET in o.get("data", {}) for o in outputs(pairing))
    drawn = next(c for c in nb.cells if c.cell_type == "code" and "%decoy map" in c.source)
    assert any("image/png" in o.get("data", {}) for o in outputs(drawn))
    frame = next(c for c in nb.cells if c.cell_type == "code" and "df = %decoy memories" in c.source)
    assert any("dataframe" in o.get("data", {}).get("text/html", "") for o in outputs(frame))
    assert_no_secrets(nb)


@pytest.mark.notebook
def test_wire_formats_notebook_catches_the_flipped_byte_and_the_bad_owner_wrap(tmp_path):
    nb = run(ROOT / "notebooks" / "02-wire-formats.ipynb", tmp_path)
    found = kinds(nb)
    assert not found["error"] and len(found["stepper"]) >= 6
    flipped = next(c for c in nb.cells if "flipped" in c.source and c.cell_type == "code")
    assert any("CryptoError" in o.get("text", "") for o in outputs(flipped))
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs(flipped))
    assert re.search(r"AES-256-GCM open", html) and "✗" in html
    owner = next(c for c in nb.cells if "badly sealed owner_wrap" in c.source)
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs(owner))
    assert "owner plaintext check" in html and "44-character" in html
    assert_no_secrets(nb)


@pytest.mark.notebook
def test_topic_map_notebook_draws_maps(tmp_path):
    nb = run(ROOT / "notebooks" / "03-topic-map.ipynb", tmp_path)
    found = kinds(nb)
    assert not found["error"] and len(found["png"]) >= 5 and found["widget"]
    assert_no_secrets(nb)


@pytest.mark.notebook
def test_both_sides_notebook_plays_a_conflict_with_the_owner(tmp_path):
    """The owner edits between the agent's read and its write: REV_CONFLICT, then the reconcile
    keeps the owner's text; the owner's panel, the who-reads-what matrix and key setup follow."""
    nb = run(ROOT / "notebooks" / "04-both-sides.ipynb", tmp_path)
    found = kinds(nb)
    assert not found["error"] and found["table"] and len(found["widget"]) >= 2

    def printed(marker: str) -> str:
        cell = next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)
        return "".join(o.get("text", "") for o in outputs(cell))

    # the owner's sharing pass shows as words (issue: a raw `<ShareReport 84 rows, …>`)
    first = next(c for c in nb.cells if c.cell_type == "code" and "sb.owner.share()" in c.source)
    shown = [o["data"] for o in outputs(first) if "data" in o]
    plain = shown[-1].get("text/plain", "")  # the cell's result, after the pairing widget
    assert plain.startswith("The owner's phone looked at ") and "Trip planner: " in plain, plain
    assert "<ShareReport" not in json.dumps(shown) and any(
        "decoy-share-report" in d.get("text/html", "") for d in shown
    )
    assert "refused: REV_CONFLICT — the memory is now at revision 2" in printed("except RevConflict")
    assert "Lisbon: fly out on Fridays or Saturdays. ['travel', 'food'] revision 3" in printed("conn.edit(mid")
    assert printed("m.frame.loc").count("matches what the server serves: True") == 1
    # after the narrow the notebook waits for the phone's sharing before it compares (issue 22)
    assert printed("set_grant(food.token_id").count("matches what the server serves: True") == 1
    assert "complete that setup before saving" in printed("set_key_setup(False)")
    assert_no_secrets(nb)


@pytest.mark.notebook
def test_06_accounts_notebook_reads_secrets_back_masked_and_names_the_owners_failing_step(tmp_path):
    """An account with its Decoy address, its password and an API key as a secret field, a memory
    about it counted in the accounts frame; unlock `preparing` then `ready` for the creator, and
    `pending` → the owner allows → `ready` for another connection, the secret shown as a
    fingerprint; a credential sealed to the wrong key stored all the same, the owner's-eye check
    saying it does not open and the recipe naming the RSA unwrap. No output holds the password
    or the API key."""
    nb = run(ROOT / "notebooks" / "06-accounts-and-secrets.ipynb", tmp_path, raw="password, api_key")
    found = kinds(nb)
    assert not found["error"] and found["table"] and len(found["stepper"]) >= 2

    def shown_by(marker: str) -> str:
        cell = next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)
        return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs(cell))

    made = shown_by("%decoy account-new")
    assert re.search(r"^sign up with: \S+@decoys\.me$", made, re.M) and "the owner's app opens it: True" in made
    assert "stored, and the owner's app opens it: True" in shown_by("%decoy password $acct --from password")
    added = shown_by("%decoy field-add $acct")
    assert "created" in added and "opened by the owner: True" in added
    listed = shown_by("%decoy accounts")
    assert "Acme Cloud" in listed and "API key" in listed
    assert re.search(r"^memories\s+1$", shown_by("loc[acct, columns]"), re.M), "the memory about the account"
    creator = shown_by("first = %decoy unlock $acct")
    assert creator.startswith("preparing") and "ready — password Secret(sha256:" in creator
    assert "masked to their length" in creator, "the verb's answer shows the secrets masked"
    assert "the password read back is the one set: True" in creator
    assert "the API key read back is the one added: True" in creator
    assert shown_by("asked = reader.unlock(").startswith("pending")
    assert "Billing assistant" in shown_by("_sandbox/unlocks")
    ready = shown_by("ready = reader.unlock(acct)")
    assert "ready — the same request: True" in ready and "the password read back is the one set: True" in ready
    assert "Secret(sha256:" in shown_by("ready.password")
    assert "has_password" in shown_by("records.seal_credential(password, wrong_key)")
    assert "does not open with the owner key" in shown_by('params={"account": acct}')
    failing = shown_by("open_blob(blob")
    assert "fails at step" in failing and "RSA-OAEP-SHA256 unwrap" in failing
    after = shown_by("caught = accounts_write.set_password(")
    assert "sealed to the wrong key: False" in after and "sealed to the account key: True" in after
    assert_no_secrets(nb)


def test_binder_builds_the_tour_environment():
    """Binder ignores root files when binder/ exists: runtime, requirements and postBuild live there."""
    binder = ROOT / "binder"
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    post = (binder / "postBuild").read_text()
    assert "set -euo pipefail" in post and "pip install" in post and "-e ." in post
    assert os.access(binder / "postBuild", os.X_OK)
    assert "jupyterlab" in (binder / "requirements.txt").read_text()


def test_the_tours_what_next_names_every_other_notebook():
    """Issue: the tour's "What next" named only 02 and 03 while five notebooks exist."""
    tour = nbformat.read(ROOT / "notebooks" / "01-tour.ipynb", as_version=4)
    (what_next,) = [c.source for c in tour.cells if c.cell_type == "markdown" and c.source.startswith("## What next")]
    named = set(re.findall(r"`(\d\d-[a-z-]+\.ipynb)`", what_next))
    assert named == {p.name for p in NOTEBOOKS} - {"01-tour.ipynb"}

"""Figures, targets and the machine they were measured on."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field


@dataclass
class Figure:
    """One measured figure, with its target and the measured ratio the verdict rests on."""

    name: str
    value: float | None
    unit: str
    target: str = ""
    ratio: str = ""  # the measured ratio, in the target's own terms
    ok: bool | None = None  # None: no target, or not measured
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "NOT MEASURED"
        if self.ok is None:
            return ""
        return "PASS" if self.ok else "MISS"


def relative(name: str, value: float, unit: str, base: float, need: float, target: str, note: str = "") -> Figure:
    """A figure that must reach `need` × `base` (e.g. ≥ 85 % of the machine's limit)."""
    ratio = value / base
    return Figure(name, value, unit, target, f"{ratio:.2f} (need ≥ {need:g})", ratio >= need, note)


def within(name: str, seconds: float, budget: float, target: str, note: str = "") -> Figure:
    """A time that must stay within `budget` seconds."""
    ratio = seconds / budget
    return Figure(name, seconds, "s", target, f"{ratio:.2f} of budget", ratio <= 1.0, note)


def check(name: str, value: float, unit: str, ok: bool, target: str, ratio: str = "", note: str = "") -> Figure:
    """A figure judged by a condition (e.g. no errors but the designed ones)."""
    return Figure(name, value, unit, target, ratio, ok, note)


def info(name: str, value: float | None, unit: str, note: str = "") -> Figure:
    """A figure printed for context, with no target of its own."""
    return Figure(name, value, unit, "", "", None, note)


def missing(name: str, target: str, why: str) -> Figure:
    """A figure that could not be measured, with the precise reason."""
    return Figure(name, None, "", target, "", None, why)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def table(figures: list[Figure], *, judge: bool = True) -> str:
    """Figures as an aligned text table; with `judge`, PASS / MISS and the ratio."""
    rows = [("figure", "measured", "target", "ratio", "verdict")]
    for f in figures:
        rows.append(
            (
                f.name,
                _fmt(f.value, f.unit),
                f.target if judge else "",
                f.ratio if judge else "",
                f.verdict if judge else "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    notes = [f"  · {f.name}: {f.note}" for f in figures if f.note]
    return "\n".join(lines + (["", "notes:", *notes] if notes else []))


def markdown(figures: list[Figure]) -> str:
    """The same table as Markdown, for bench/README.md."""
    out = ["| figure | measured | target | ratio | verdict |", "| --- | --- | --- | --- | --- |"]
    for f in figures:
        out.append(f"| {f.name} | {_fmt(f.value, f.unit)} | {f.target} | {f.ratio} | {f.verdict} |")
    notes = [f"- **{f.name}**: {f.note}" for f in figures if f.note]
    return "\n".join(out + (["", *notes] if notes else []))


def cpu_count() -> int:
    """Cores this process may run on (what the thread pools use)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass
class Machine:
    nproc: int
    cpu: str
    python: str
    cryptography: str
    openssl: str
    node: str
    extra: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [
            f"nproc {self.nproc}; CPU {self.cpu}",
            f"Python {self.python}; cryptography {self.cryptography} ({self.openssl}); Node {self.node}",
        ]
        if "rsa" in self.extra:
            out.append(f"RSA-2048 OAEP-SHA256 unwrap, one call: {self.extra['rsa']}")
        if os.environ.get(IA32CAP):
            out.append(f"{IA32CAP}={os.environ[IA32CAP]} for this run: OpenSSL kept off some CPU features")
        if "load" in self.extra:
            out.append(
                f"load average (1 min) before / after the run: {self.extra['load']}"
                " — other work on these cores skews every figure"
            )
        return out


# One unwrap timed in a child process, so an OpenSSL CPU-feature mask applies to it alone.
_RSA_CALL = (
    "import time\n"
    "from cryptography.hazmat.primitives import hashes\n"
    "from cryptography.hazmat.primitives.asymmetric import padding, rsa\n"
    "k = rsa.generate_private_key(65537, 2048)\n"
    "pad = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)\n"
    "wraps = [k.public_key().encrypt(bytes(32), pad) for _ in range(200)]\n"
    "best = []\n"
    "for _ in range(3):\n"
    "    t = time.process_time()\n"
    "    for w in wraps:\n"
    "        k.decrypt(w, pad)\n"
    "    best.append((time.process_time() - t) / len(wraps))\n"
    "print(min(best))\n"
)
IA32CAP = "OPENSSL_ia32cap"  # OpenSSL reads it spelled so, lower case and all
NO_IFMA = ":~0x200000"  # its value: CPUID leaf 7 EBX bit 21 (AVX-512 IFMA) off, as on a CPU without it


def rsa_call() -> str:
    """What one RSA unwrap costs here, and (x86) with OpenSSL kept off AVX-512 IFMA: its RSA-2048
    code is about twice as fast with it, so on a CPU that has it the Python around each unwrap
    weighs about twice as much in every ratio to (a)."""

    def cost(**env: str) -> float | None:
        run = [sys.executable, "-c", _RSA_CALL]
        done = subprocess.run(run, capture_output=True, text=True, env={**os.environ, **env}, timeout=120)
        try:
            return float(done.stdout.strip())
        except ValueError:
            return None

    here = cost()
    if here is None:
        return "not measured"
    text = f"{here * 1e6:.0f} µs of CPU"
    without = cost(**{IA32CAP: NO_IFMA}) if platform.machine() in ("x86_64", "AMD64") else None
    if without is not None:
        text += f"; {without * 1e6:.0f} µs with OpenSSL kept off AVX-512 IFMA ({without / here:.1f}×)"
    return text


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return float("nan")


def machine() -> Machine:
    """What the figures were measured on: nproc, CPU model, Python / cryptography / Node."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            m = re.search(r"^model name\s*:\s*(.+)$", fh.read(), re.M)
            if m:
                cpu = m.group(1).strip()
    except OSError:
        pass
    import cryptography
    from cryptography.hazmat.backends.openssl.backend import backend

    node = shutil.which("node")
    node_version = "not installed"
    if node:
        node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    return Machine(
        cpu_count(), cpu, sys.version.split()[0], cryptography.__version__, backend.openssl_version_text(), node_version
    )

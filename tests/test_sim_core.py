"""The compiled event loop (`capcliff.sim.core`): used only while built from the current source,
and, where it is built, bit-identical to the pure-Python loop."""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from capcliff.sim import core
from capcliff.sim.config import PreemptionMode
from capcliff.sim.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import POLICIES, PREEMPTING_POLICIES, pressure_case, random_case, toy_model

COMPILED = core.load_compiled()


def _fake_core(root: Path, package: str, digest: str) -> None:
    """A stand-in compiled package: a module per core module, each with `SOURCE_SHA256`."""
    folder = root / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name in core.CORE_MODULES:
        (folder / f"{name}.py").write_text(f"SOURCE_SHA256 = {digest!r}\nReplicaSim = {name!r}\n")


def test_a_stale_core_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Built from other sources (a digest that is not the current one): the loader refuses it,
    # and accepts the same package when the digest matches.
    _fake_core(tmp_path, "stale_core", "0" * 64)
    _fake_core(tmp_path, "fresh_core", core.source_digest())
    monkeypatch.syspath_prepend(str(tmp_path))
    assert core.load_compiled("stale_core") is None
    fresh = core.load_compiled("fresh_core")
    assert fresh is not None and fresh.ReplicaSim == "replica"
    assert core.load_compiled("no_such_core") is None  # never built: no error, no core
    for name in list(sys.modules):
        if name.split(".")[0] in ("stale_core", "fresh_core"):
            del sys.modules[name]


def test_the_digest_follows_every_source(tmp_path: Path) -> None:
    here = Path(core.__file__).parent.parent  # the capcliff package
    copy = tmp_path / "capcliff"
    shutil.copytree(here, copy, ignore=shutil.ignore_patterns("__pycache__", "_core"))
    before = core.source_digest(copy)
    assert before == core.source_digest()
    # one byte more in a core module, or in a module the loop imports: another digest
    edited = [f"sim/{name}.py" for name in core.CORE_MODULES] + ["perf/step_time.py"]
    for rel in edited:
        path = copy / rel
        text = path.read_bytes()
        path.write_bytes(text + b"\n")
        assert core.source_digest(copy) != before, rel
        path.write_bytes(text)
    assert core.source_digest(copy) == before


def test_the_switch_forces_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(core.ENV_SWITCH, "python")
    assert core.core_name() == "python"
    assert core.replica_class() is ReplicaSim
    monkeypatch.delenv(core.ENV_SWITCH)
    assert core.core_name() == ("python" if COMPILED is None else "compiled")


def test_the_compiled_group_is_closed() -> None:
    # A module the loop calls with a replica (or a planned step) must be compiled with it: its
    # annotations would name the pure-Python classes, and mypyc rejects the build (which then
    # falls back to pure Python without a word).
    sim = Path(core.__file__).parent
    for name in core.CORE_MODULES:
        text = (sim / f"{name}.py").read_text()
        for imported in re.findall(r"from capcliff\.sim\.(\w+) import", text):
            if imported not in core.CORE_MODULES:
                other = (sim / f"{imported}.py").read_text()
                assert "ReplicaSim" not in other and "PlannedStep" not in other, (name, imported)


def _same(a: object, b: object) -> bool:
    """Every field equal, bit for bit (NaN equal to NaN)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return type(a) is type(b) and repr(a) == repr(b)


@pytest.mark.skipif(COMPILED is None, reason="no compiled core built from the current source")
def test_compiled_and_pure_python_agree_bit_for_bit() -> None:
    assert COMPILED is not None
    compiled = COMPILED.ReplicaSim
    modes = (PreemptionMode.RECOMPUTE, PreemptionMode.SWAP)
    cases = []
    for seed in range(3):
        for mode in modes:
            for policy in POLICIES:
                for arrival in ("batch", "poisson", "clients"):
                    requests, capacity, config = random_case(seed, policy, mode, arrival)
                    cases.append((requests, capacity, config, make_policy(config, requests)))
            cases += [pressure_case(seed, policy, mode) for policy in PREEMPTING_POLICIES]
    for requests, capacity, config, rule in cases:
        pure = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
        fast = compiled(requests, toy_model(), capacity, config, rule).run()
        assert _same(pure, fast), (config, len(requests))

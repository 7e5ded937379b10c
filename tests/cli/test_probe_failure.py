"""A probe that fails on this machine is a clean error (exit 2, one line), not an internal error (exit 3)."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")


def test_a_failed_memory_probe_is_one_line_and_exit_2(run, monkeypatch, tmp_path):
    def copy_fails(*args, **kwargs):
        raise MemoryError("cannot map the copy target")

    from kvplan.probe import memory

    monkeypatch.setattr(memory, "array_bytes_for", lambda llc, ram: 8 * 2**20)  # small arrays: the test is quick
    monkeypatch.setattr(np, "copyto", copy_fails)  # every copy worker fails in its first round
    result = run("profiles", "probe", "--quick", "-o", tmp_path / "me.yaml")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if not line.startswith("kvplan: note: probe:")]
    assert errors == ["kvplan: error: memory bandwidth probe failed: cannot map the copy target"]
    assert not (tmp_path / "me.yaml").exists()  # nothing half written


def test_a_wrong_product_is_a_probe_error_for_library_callers(monkeypatch):
    from kvplan.errors import KvplanError, ProbeError
    from kvplan.probe import compute

    monkeypatch.setattr(np, "matmul", lambda a, b: np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype))
    with pytest.raises(ProbeError, match=r"compute probe: a 256 × 256 float32 product gave a wrong result"):
        compute.measure_compute()
    assert issubclass(ProbeError, KvplanError)

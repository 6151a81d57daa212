"""sim/objcache.py: Verilator's runtime objects are compiled once per compile command
and copied into later builds; every other source is compiled each time."""

import os
import stat
import sys

from opengse.sim import objcache


def _fake_compiler(tmp_path):
    """A 'compiler' that writes its -o file and its -MMD file, and logs each call."""
    cc = tmp_path / "cc"
    cc.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        "args = sys.argv[1:]\n"
        "out = pathlib.Path(args[args.index('-o') + 1])\n"
        "out.write_text('object of ' + args[-1] + ' ' + ' '.join(a for a in args if a.startswith('-O')))\n"
        "out.with_suffix('.d').write_text(out.name + ': ' + args[-1])\n"
        f"open({str(tmp_path / 'calls')!r}, 'a').write(args[-1] + '\\n')\n"
    )
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    return cc


def _cc(cache, cc, *args):
    return objcache.main([str(cache), str(cc), *map(str, args)])


def test_runtime_objects_compiled_once(tmp_path, monkeypatch):
    include = tmp_path / "include"
    include.mkdir()
    (include / "verilated.mk").write_text("")
    runtime = include / "verilated.cpp"
    runtime.write_text("int x;")
    model = tmp_path / "Vtop.cpp"
    model.write_text("int y;")
    cc, cache = _fake_compiler(tmp_path), tmp_path / "cache"
    calls = tmp_path / "calls"
    for build in ("a", "b"):
        (tmp_path / build).mkdir()
        monkeypatch.chdir(tmp_path / build)
        (tmp_path / build / "Vtop.mk").write_text("")  # Verilator writes it before make runs
        assert _cc(cache, cc, "-Os", "-MMD", "-c", "-o", "verilated.o", runtime) == 0
        assert _cc(cache, cc, "-Os", "-c", "-o", "Vtop.o", model) == 0
        assert (tmp_path / build / "verilated.d").exists()
        # A copy has a fresh time stamp, newer than Vtop.mk (which the runtime objects
        # depend on): make takes it as up to date.
        assert os.path.getmtime("verilated.o") >= os.path.getmtime("Vtop.mk")
    assert calls.read_text().splitlines() == [str(runtime), str(model), str(model)]
    assert (tmp_path / "b" / "verilated.o").read_text() == (tmp_path / "a" / "verilated.o").read_text()
    # Other flags are another object; a changed source too.
    monkeypatch.chdir(tmp_path / "b")
    assert _cc(cache, cc, "-O0", "-MMD", "-c", "-o", "verilated.o", runtime) == 0
    assert (tmp_path / "b" / "verilated.o").read_text().endswith("-O0")
    runtime.write_text("int x = 1;")
    assert _cc(cache, cc, "-Os", "-MMD", "-c", "-o", "verilated.o", runtime) == 0
    assert calls.read_text().splitlines().count(str(runtime)) == 3


def test_failed_compile_is_not_stored(tmp_path, monkeypatch):
    include = tmp_path / "include"
    include.mkdir()
    (include / "verilated.mk").write_text("")
    runtime = include / "verilated_vpi.cpp"
    runtime.write_text("")
    monkeypatch.chdir(tmp_path)
    false = tmp_path / "false"
    false.write_text(f"#!{sys.executable}\nraise SystemExit(3)\n")
    false.chmod(false.stat().st_mode | stat.S_IEXEC)
    cache = tmp_path / "cache"
    assert objcache.main([str(cache), str(false), "-c", "-o", "verilated_vpi.o", str(runtime)]) == 3
    assert not list(cache.glob("*.o"))

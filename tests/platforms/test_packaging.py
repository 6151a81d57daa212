"""The installed package holds every subpackage of the tree: a `pip install .` outside
the checkout (no editable install) would otherwise lose a folder of gateware."""

import pathlib

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_subpackage_is_listed():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    dirs = cfg["package-dir"]
    found = set()
    for pkg, folder in dirs.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((pkg,) + rel))
    assert found == listed, (
        f"missing from pyproject.toml: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"
    )

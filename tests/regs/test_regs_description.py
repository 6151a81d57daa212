"""One description, four outputs that cannot disagree.

* the description itself: offsets assigned and checked, every catalog block described,
  every counter of every block's signature an RO register of its width;
* docs/registers.md and firmware/gse_regs.h are what ``gse regs`` generates now, and
  parsed back they give the description's addresses, widths, access, resets and counts;
* the header compiles, and static_asserts written from the description hold in C++;
* the Python driver reaches every register at the description's address (the RTL bank
  is built from the same object: test_regs_bank.py checks its ports, the AXI4-Lite
  test its behaviour).
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from amaranth.hdl import Shape
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.firmware.cli import main as gse
from opengse.firmware.regs import RegisterError, Registers
from opengse.firmware.regs_gen import DOCS_PATH, HEADER_PATH, reference_outputs
from opengse.rtl.catalog import blocks
from opengse.rtl.regs.blocks import BLOCK_REGISTERS, PORTS_BUILD, reference_map
from opengse.rtl.regs.description import Access, Register, RegisterBlock, RegisterMap
from opengse.rtl.regs.from_signature import registers_from_signature
from opengse.rtl.regs.system import IDENT

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def regmap():
    return reference_map()


# ---- the description ----------------------------------------------------------------------


def test_offsets_are_assigned_aligned_and_checked():
    blk = RegisterBlock(
        "b",
        [
            Register("a", 8, Access.RW, doc="a"),
            Register("wide", 40, Access.RO, doc="w"),
            Register("arr", 32, Access.RO, count=3, doc="x"),
            Register("fixed", 32, Access.RW, offset=0x30, doc="f"),
            Register("after", 1, Access.W1C, doc="z"),
        ],
    )
    assert [(r.name, r.offset) for r in blk] == [
        ("a", 0),
        ("wide", 8),
        ("arr", 0x10),
        ("fixed", 0x30),
        ("after", 0x34),
    ]
    assert blk.size == 64
    # An automatic offset steps around fixed ones; two fixed ones must not overlap.
    blk = RegisterBlock(
        "b", [Register("a", 32, Access.RO, count=4, doc="a"), Register("b", 32, Access.RO, offset=8, doc="b")]
    )
    assert [(r.name, r.offset) for r in blk] == [("a", 12), ("b", 8)]
    with pytest.raises(ValueError, match="overlap"):
        RegisterBlock(
            "b",
            [
                Register("a", 32, Access.RO, count=4, offset=0, doc="a"),
                Register("b", 32, Access.RO, offset=8, doc="b"),
            ],
        )
    with pytest.raises(ValueError, match="aligned"):
        Register("w", 64, Access.RO, offset=4, doc="w")
    with pytest.raises(ValueError, match="twice"):
        RegisterBlock("b", [Register("a", 1, Access.RO, doc="a")] * 2)
    with pytest.raises(ValueError, match="does not fit"):
        Register("r", 4, Access.RW, reset=16, doc="r")
    with pytest.raises(ValueError, match="doc"):
        Register("r", 4, Access.RW)
    with pytest.raises(ValueError, match="overlap"):
        RegisterMap(
            [
                RegisterBlock("a", [Register("x", 1, Access.RO, doc="x")], base=0),
                RegisterBlock("b", [Register("y", 1, Access.RO, doc="y")], base=0),
            ]
        )
    m = RegisterMap(
        [
            RegisterBlock("a", [Register("x", 1, Access.RO, doc="x")], base=0x40),
            RegisterBlock("b", [Register("y", 32, Access.RO, count=20, doc="y")]),
            RegisterBlock("c", [Register("z", 1, Access.RO, doc="z")]),
        ]
    )
    assert [(b.name, b.base) for b in m] == [("a", 0x40), ("b", 0x80), ("c", 0x100)]


def test_round_trip_and_fingerprint(regmap):
    again = RegisterMap.from_dict(regmap.as_dict())
    assert again.as_dict() == regmap.as_dict()
    assert again.fingerprint() == regmap.fingerprint()
    changed = regmap.as_dict()
    changed["blocks"][1]["registers"][0]["width"] = 31
    assert RegisterMap.from_dict(changed).fingerprint() != regmap.fingerprint()


def test_every_catalog_block_is_described():
    names = {spec.name for spec in blocks().values()}
    assert set(BLOCK_REGISTERS) == names


def test_every_plain_port_is_a_register_or_wired(regmap):
    """Independently of the derivation: each block's stat_* outputs are RO registers of
    the port's width and array size, other outputs RO, inputs RW or wired."""
    for kind, spec in BLOCK_REGISTERS.items():
        spec_ = blocks()[kind]
        component = spec_.factory(**spec_.params, **PORTS_BUILD.get(kind, {}))  # as the reference map
        component._MustUse__silence = True
        blk = regmap[kind]
        for name, member in component.signature.members.items():
            if member.is_signature or name in spec.wired:
                continue
            reg = blk[name[5:] if name.startswith("stat_") else name]
            assert reg.width == Shape.cast(member.shape).width, f"{kind}.{name}"
            assert reg.count == (member.dimensions[0] if member.dimensions else 1)
            assert reg.access == (Access.RO if member.flow == Out else Access.RW), f"{kind}.{name}"


def test_an_undescribed_port_fails_the_description():
    class Block(wiring.Component):
        def __init__(self):
            super().__init__({"stat_a": Out(32), "stat_new": Out(32), "cfg": In(4)})

        def elaborate(self, platform):
            raise NotImplementedError

    b = Block()
    b._MustUse__silence = True
    with pytest.raises(ValueError, match="neither described nor wired"):
        registers_from_signature(b, {"stat_a": "a", "cfg": "c"})
    with pytest.raises(ValueError, match="does not have"):
        registers_from_signature(b, {"stat_a": "a", "stat_new": "n", "cfg": "c", "gone": "g"})
    regs = registers_from_signature(b, {"stat_a": "a", "stat_new": "n", "cfg": "c"}, resets={"cfg": 5})
    assert [(r.name, r.access, r.reset) for r in regs] == [
        ("a", Access.RO, 0),
        ("new", Access.RO, 0),
        ("cfg", Access.RW, 5),
    ]


# ---- the generated files --------------------------------------------------------------------


@pytest.mark.parametrize("rel", [DOCS_PATH, HEADER_PATH], ids=str)
def test_committed_file_is_what_gse_regs_generates(rel):
    assert (ROOT / rel).read_text() == reference_outputs()[rel], f"{rel} is out of date: run `gse regs`"


def _expected(regmap):
    """{name: (address, width, access, reset, count, stride)} from the description."""
    return {
        f"{b.name}.{r.name}": (regmap.address(b, r), r.width, r.access.value, r.reset, r.count, r.stride)
        for b, r in regmap.registers()
    }


def test_docs_table_parses_back_to_the_description(regmap):
    text = (ROOT / DOCS_PATH).read_text()
    rows = re.findall(
        r"^\| (0x[0-9a-f]+) \| `([\w.]+)(?:\[(\d+)\])?` \| (\w+) \| (\d+) \| "
        r"(0x[0-9a-f]+|—) \| (\d+|—) \|",
        text,
        re.M,
    )
    got = {}
    for addr, name, count, access, width, reset, stride in rows:
        reg = regmap[name.split(".")[0]][name.split(".")[1]]
        got[name] = (
            int(addr, 16),
            int(width),
            access,
            0 if reset == "—" else int(reset, 16),
            int(count or 1),
            int(stride) if stride != "—" else reg.stride,
        )
        if reset == "—":
            assert reg.reset == 0 and reg.access != Access.RW
    assert got == _expected(regmap)
    assert f"`{regmap.fingerprint():#010x}`" in text


def test_header_parses_back_to_the_description(regmap):
    text = (ROOT / HEADER_PATH).read_text()
    defs = {k: v for k, v in re.findall(r"^#define (\w+) (\S+)$", text, re.M)}

    def num(v):
        return (
            int(re.sub(r"u?l*$", "", v.lower()), 0)
            if not v.startswith("GSE_")
            else {"GSE_ACCESS_RO": "RO", "GSE_ACCESS_RW": "RW", "GSE_ACCESS_W1C": "W1C"}[v]
        )

    got = {}
    for blk, reg in regmap.registers():
        m = f"GSE_{blk.name.upper()}_{reg.name.upper()}"
        got[f"{blk.name}.{reg.name}"] = (
            num(defs[m + "_ADDR"]),
            num(defs[m + "_WIDTH"]),
            num(defs[m + "_ACCESS"]),
            num(defs[m + "_RESET"]),
            num(defs[m + "_COUNT"]),
            num(defs[m + "_STRIDE"]),
        )
        assert num(defs[m + "_MASK"]) == reg.mask and num(defs[m + "_WORDS"]) == reg.words
        assert num(defs[f"GSE_{blk.name.upper()}_BASE"]) == blk.base
    assert got == _expected(regmap)
    assert num(defs["GSE_MAP_ID"]) == regmap.fingerprint()
    n_regs = sum(1 for _ in regmap.registers())
    assert len([k for k in defs if k.endswith("_ADDR")]) == n_regs


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_header_compiles_and_agrees_in_cxx(regmap, tmp_path):
    lines = [f'#include "{ROOT / HEADER_PATH}"', "#include <cstdint>"]
    for blk, reg in regmap.registers():
        m = f"GSE_{blk.name.upper()}_{reg.name.upper()}"
        lines.append(f'static_assert({m}_ADDR == {regmap.address(blk, reg)}u, "{m}");')
        lines.append(f'static_assert({m}_MASK == {reg.mask}ull, "{m}");')
        lines.append(f'static_assert({m}_RESET == {reg.reset}ull, "{m}");')
        if reg.count > 1:
            lines.append(
                f"static_assert({m}_ADDR_I({reg.count - 1}) == "
                f'{regmap.address(blk, reg, reg.count - 1)}u, "{m}");'
            )
    src = tmp_path / "check.cpp"
    src.write_text("\n".join(lines) + "\n")
    for cmd in (
        ["g++", "-fsyntax-only", "-Wall", "-Werror", "-std=c++11", str(src)],
        ["g++", "-fsyntax-only", "-Wall", "-Werror", "-x", "c", "-std=c99", str(ROOT / HEADER_PATH)],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


# ---- the driver -------------------------------------------------------------------------------


class RecordingBus:
    """A word memory that records each access; ident and map_id preset."""

    def __init__(self, regmap):
        self.mem = {
            regmap.address("sys", "ident"): IDENT,
            regmap.address("sys", "map_id"): regmap.fingerprint(),
        }
        self.log = []

    def read32(self, addr):
        self.log.append(("r", addr))
        return self.mem.get(addr, 0)

    def write32(self, addr, value):
        assert 0 <= value < 1 << 32
        self.log.append(("w", addr, value))
        self.mem[addr] = value


def test_driver_reaches_every_register_at_its_address(regmap):
    bus = RecordingBus(regmap)
    regs = Registers(bus, regmap)
    for blk, reg in regmap.registers():
        for i in range(reg.count):
            addr = regmap.address(blk, reg, i)
            bus.log.clear()
            regs.read(f"{blk.name}.{reg.name}", i if reg.count > 1 else None)
            assert bus.log == [("r", addr + 4 * w) for w in range(reg.words)]
            if reg.access == Access.RW:
                bus.log.clear()
                value = reg.mask ^ (reg.mask >> 1)  # the top bit
                regs.write(f"{blk.name}.{reg.name}", value, i if reg.count > 1 else None)
                assert bus.log == [
                    ("w", addr + 4 * w, (value >> 32 * w) & 0xFFFFFFFF) for w in range(reg.words)
                ]
                assert regs.read(f"{blk.name}.{reg.name}", i if reg.count > 1 else None) == value


def test_driver_attribute_access_and_errors(regmap):
    bus = RecordingBus(regmap)
    regs = Registers(bus, regmap)
    regs.dgsq_manager.node_id = 0x1234
    assert bus.mem[regmap.address("dgsq_manager", "node_id")] == 0x1234
    assert regs.dgsq_manager.node_id == 0x1234
    regs.ctl_encoder.mac_da = 0x0211_2233_4455
    assert regs.ctl_encoder.mac_da == 0x0211_2233_4455
    regs.grant_arbiter.weight[3] = 9
    assert regs.grant_arbiter.weight[3] == 9 and len(regs.grant_arbiter.weight) == 16
    bus.mem[regmap.address("sprayer", "bytes", 2)] = 77
    assert list(regs.sprayer.bytes) == [0, 0, 77, 0]
    assert regs.read("sprayer.bytes[2]") == 77
    for bad, match in [
        (lambda: regs.nothing, "unknown block"),
        (lambda: regs.tagger.nothing, "unknown register"),
        (lambda: setattr(regs.tagger, "frames", 1), "read-only"),
        (lambda: setattr(regs.voq, "query_queue", 1 << 10), "out of range"),
        (lambda: setattr(regs.voq, "query_queue", "3"), "not an integer"),
        (lambda: regs.grant_arbiter.weight[16], "out of range"),
        (lambda: regs.read("tagger"), "block.register"),
        (lambda: regs.clear("tagger.frames"), "not a W1C"),
    ]:
        with pytest.raises(RegisterError, match=match):
            bad()
    dump = regs.dump()
    assert len(dump) == sum(r.count for _, r in regmap.registers())
    assert dump["sys.ident"] == IDENT and dump["grant_arbiter.weight[3]"] == 9
    bus.mem[regmap.address("sys", "map_id")] ^= 1
    with pytest.raises(RegisterError, match="not this description"):
        Registers(bus, regmap)


# ---- the command ----------------------------------------------------------------------------


def test_gse_regs_writes_and_checks(tmp_path, capsys):
    assert gse(["regs", "-o", str(ROOT), "--check"]) == 0
    assert gse(["regs", "-o", str(tmp_path)]) == 0
    for rel, text in reference_outputs().items():
        assert (tmp_path / rel).read_text() == text
    assert gse(["regs", "-o", str(tmp_path), "--check"]) == 0
    (tmp_path / HEADER_PATH).write_text("stale")
    capsys.readouterr()
    assert gse(["regs", "-o", str(tmp_path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "out of date" in err and "gse_regs.h" in err and "Traceback" not in err

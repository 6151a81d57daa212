"""pyuvm test of GSEParser on :mod:`opengse.sim.uvm.axis_env`: a mix of valid DATA,
control, plain Ethernet and every kind of malformed frame (built as in
``cocotb_parser.py``), random idle cycles and back-pressure on ``m_axis`` and
``m_hdr``; the scoreboard's model is :func:`opengse.sim.parser_model.parse_reference`,
and the ``stat_*`` counters are checked against the same model at the end."""

import random

import cocotb
import pyuvm
from cocotb.clock import Clock
from pyuvm import ConfigDB, uvm_test

from opengse.sim.gse_scapy import control_frame, tag
from opengse.sim.parser_model import HDR_FIELDS, parse_reference
from opengse.sim.runner import test_params
from opengse.sim.traffic import frame_sizes, random_frame
from opengse.sim.uvm.axis_env import CONFIG_KEY, AxisEnv, AxisEnvConfig, AxisItem, AxisSequence

SIDE_FIELDS = HDR_FIELDS + ("gse", "eth_dst", "eth_src", "eth_type")
COUNTERS = ("frames", "other", "drop_runt", "drop_ver", "drop_type", "drop_ttl", "err_len", "err_frame")


def gse_fields(r, **over):
    f = {
        "type": 0,
        "flags": r.randrange(8),
        "tc": r.randrange(8),
        "tenant": r.randrange(4096),
        "src_node": r.randrange(65536),
        "dst_node": r.randrange(65536),
        "port": r.randrange(256),
        "ttl": r.randrange(1, 256),
        "seq": r.randrange(65536),
        "dgsq": r.randrange(65536),
    }
    f.update(over)
    return f


def make_frame(r, size):
    """``(raw, bad, kind)``: a random frame of about ``size`` bytes, malformed at times."""
    bad = r.random() < 0.05
    k = r.random()
    if k < 0.45:
        orig = random_frame(r, max(60, size - 18))
        return tag(orig, **gse_fields(r, len=len(orig))), bad, "data"
    if k < 0.55:
        fields = gse_fields(r, len=r.randrange(65536))
        del fields["type"]
        return control_frame(r.choice(["REQUEST", "GRANT", "PROBE"]), **fields), bad, "control"
    if k < 0.67:
        return random_frame(r, size), bad, "plain"
    if k < 0.72:
        raw = bytearray(tag(random_frame(r, 60), **gse_fields(r, len=60)))
        raw[14] = (r.choice([0, 2, 3, 15]) << 4) | (raw[14] & 15)
        return bytes(raw), bad, "ver"
    if k < 0.77:
        return tag(random_frame(r, 60), **gse_fields(r, type=r.randrange(4, 16), len=60)), bad, "type"
    if k < 0.82:
        return tag(random_frame(r, 60), **gse_fields(r, ttl=0, len=60)), bad, "ttl"
    if k < 0.87:
        return bytes(r.randrange(256) for _ in range(r.randint(1, 13))), bad, "runt_eth"
    if k < 0.92:
        raw = tag(random_frame(r, 60), **gse_fields(r, len=60))
        return raw[: r.randint(14, 31)], bad, "runt_gse"
    orig = random_frame(r, max(60, size - 18))
    wrong = (len(orig) + r.choice([-1, 1, 7, -60, 1000])) % 65536
    return tag(orig, **gse_fields(r, len=wrong)), bad, "len"


def parser_model(strip):
    """Scoreboard model: ``parse_reference`` mapped onto expected :class:`AxisItem` s."""

    def model(item):
        ref = parse_reference(item.data, item.error, strip=strip)
        if ref[0] == "drop":
            return []
        _, out, hdr, err, _reasons, _kind = ref
        return [AxisItem("exp", out, err, hdr)]

    return model


def expected_counters(items, strip):
    stats = dict.fromkeys(COUNTERS, 0)
    for item in items:
        ref = parse_reference(item.data, item.error, strip=strip)
        if ref[0] == "drop":
            stats[f"drop_{ref[1]}"] += 1
        else:
            stats[ref[5]] += 1
            for reason in ref[4]:
                stats[f"err_{reason}"] += 1
    return stats


class ParserTestBase(uvm_test):
    """Builds the env for the parser; subclasses set the traffic and back-pressure."""

    COUNT, P_IN, P_OUT, SEED = 150, 0.3, 0.4, 21

    def build_phase(self):
        self.params = test_params()
        self.strip = bool(self.params["strip"])
        self.rng = random.Random(self.SEED)
        cfg = AxisEnvConfig(
            dut=cocotb.top,
            model=parser_model(self.strip),
            m_side="m_hdr",
            m_side_fields=SIDE_FIELDS,
            p_in=self.P_IN,
            p_out=self.P_OUT,
            seed=self.SEED,
        )
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        self.env = AxisEnv("env", self)

    def items(self):
        max_size = 2048 if self.params["data_width"] < 32 else 9018
        out = []
        for size in frame_sizes(self.rng, self.COUNT, max_size=max_size):
            raw, bad, kind = make_frame(self.rng, size)
            out.append(AxisItem("in", raw, bad, note=kind))
        return out

    async def run_phase(self):
        self.raise_objection()
        cocotb.start_soon(Clock(cocotb.top.clk, 10, unit="ns").start())
        await self.env.reset()
        items = self.items()
        await AxisSequence("seq", items).start(self.env.seqr)
        await self.env.drain()
        dut = cocotb.top
        got = {n: int(getattr(dut, f"stat_{n}").value) for n in COUNTERS}
        want = expected_counters(items, self.strip)
        assert got == want, f"counters {got} != expected {want}"
        self.logger.info(f"counters {got}")
        self.drop_objection()


@pyuvm.test()
class ParserMixBackpressure(ParserTestBase):
    """Mixed valid/malformed frames with random idle cycles and back-pressure."""


@pyuvm.test()
class ParserMixFullRate(ParserTestBase):
    """The same mix with no pauses at all."""

    COUNT, P_IN, P_OUT, SEED = 100, 0.0, 0.0, 22

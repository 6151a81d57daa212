"""pyuvm test of GSETagger on :mod:`opengse.sim.uvm.axis_env`: plain frames of every
size class with random headers on ``s_hdr``, spoofed (already GSE), runt and
MAC-errored frames mixed in, random idle cycles and back-pressure; the scoreboard's
model is :func:`opengse.sim.gse_scapy.tag`, and the ``stat_*`` counters are checked."""

import random

import cocotb
import pyuvm
from cocotb.clock import Clock
from pyuvm import ConfigDB, uvm_test

from opengse.sim.gse_scapy import GSE_ETHERTYPE, tag
from opengse.sim.runner import test_params
from opengse.sim.traffic import random_tag_fields, frame_sizes, random_frame
from opengse.sim.uvm.axis_env import CONFIG_KEY, AxisEnv, AxisEnvConfig, AxisItem, AxisSequence

HDR_FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
COUNTERS = ("frames", "drop_spoof", "drop_runt", "err_frame")


def tagger_model(item):
    """What the tagger must output for ``item`` (the frame plus its ``s_hdr`` entry):
    runts (< 14 bytes) and frames already carrying the GSE EtherType are dropped."""
    raw = item.data
    if len(raw) < 14 or int.from_bytes(raw[12:14], "big") == GSE_ETHERTYPE:
        return []
    return [AxisItem("exp", tag(raw, **item.side), item.error)]


def expected_counters(items):
    stats = dict.fromkeys(COUNTERS, 0)
    for item in items:
        if item.note in ("spoof", "runt"):
            stats[f"drop_{item.note}"] += 1
        else:
            stats["frames"] += 1
            stats["err_frame"] += item.error
    return stats


class TaggerTestBase(uvm_test):
    """Builds the env for the tagger; subclasses set the traffic and back-pressure."""

    COUNT, P_IN, P_OUT, SEED, MALFORMED = 150, 0.3, 0.3, 31, True

    def build_phase(self):
        self.params = test_params()
        self.rng = random.Random(self.SEED)
        cfg = AxisEnvConfig(
            dut=cocotb.top,
            model=tagger_model,
            s_side="s_hdr",
            s_side_fields=HDR_FIELDS,
            p_in=self.P_IN,
            p_out=self.P_OUT,
            seed=self.SEED,
        )
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        self.env = AxisEnv("env", self)

    def header(self, frame_len):
        return random_tag_fields(self.rng, frame_len)

    def items(self):
        r = self.rng
        max_size = 2048 if self.params["data_width"] < 32 else 9018
        for size in frame_sizes(r, self.COUNT, max_size=max_size):
            k = r.random() if self.MALFORMED else 1.0
            if k < 0.08:
                raw, note = random_frame(r, size, ethertype=GSE_ETHERTYPE), "spoof"
            elif k < 0.14:
                raw, note = bytes(r.randrange(256) for _ in range(r.randint(1, 13))), "runt"
            else:
                raw, note = random_frame(r, size), "ok"
            bad = note != "spoof" and r.random() < 0.1
            yield AxisItem("in", raw, bad, self.header(len(raw)), note=note)

    async def run_phase(self):
        self.raise_objection()
        cocotb.start_soon(Clock(cocotb.top.clk, 10, unit="ns").start())
        await self.env.reset()
        items = list(self.items())
        await AxisSequence("seq", iter(items)).start(self.env.seqr)
        await self.env.drain()
        dut = cocotb.top
        got = {n: int(getattr(dut, f"stat_{n}").value) for n in COUNTERS}
        want = expected_counters(items)
        assert got == want, f"counters {got} != expected {want}"
        self.logger.info(f"counters {got}")
        self.drop_objection()


@pyuvm.test()
class TaggerMixBackpressure(TaggerTestBase):
    """Valid, spoofed, runt and MAC-errored frames, random idle cycles and back-pressure."""


@pyuvm.test()
class TaggerFullRate(TaggerTestBase):
    """Valid frames only, no pauses."""

    COUNT, P_IN, P_OUT, SEED, MALFORMED = 60, 0.0, 0.0, 32, False

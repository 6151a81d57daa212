"""pyuvm test of ReorderBuffer on :mod:`opengse.sim.uvm.axis_env`: one source's
containers shuffled within half the window, with duplicate containers and runts
mixed in, random idle cycles and back-pressure; the scoreboard's model is an
in-order release model (for one source the output order is fully determined)."""

import random

import cocotb
import pyuvm
from cocotb.clock import Clock
from pyuvm import ConfigDB, uvm_test

from opengse.sim.pktc_model import FIRST, LAST, frame_fields, tagged_frame
from opengse.sim.runner import test_params
from opengse.sim.uvm.axis_env import CONFIG_KEY, AxisEnv, AxisEnvConfig, AxisItem, AxisSequence


class InOrderRelease:
    """Plain model: containers of one source released whole, in seq order, once
    complete; frames of a container already complete or released are dropped."""

    def __init__(self):
        self.next = 0
        self.partial = {}
        self.complete = {}
        self.dropped = 0

    def __call__(self, item):
        fr = item.data
        if len(fr) < 32:
            self.dropped += 1
            return []
        f = frame_fields(fr)
        q = f["seq"]
        if q < self.next or q in self.complete or (f["flags"] & FIRST and q in self.partial):
            self.dropped += 1
            return []
        self.partial.setdefault(q, []).append(fr)
        if f["flags"] & LAST:
            self.complete[q] = self.partial.pop(q)
        out = []
        while self.next in self.complete:
            out += [AxisItem("exp", x) for x in self.complete.pop(self.next)]
            self.next += 1
        return out


def stimulus(rng, ncont, half_window):
    items, sent = [], []
    for start in range(0, ncont, half_window):
        block = list(range(start, min(start + half_window, ncont)))
        rng.shuffle(block)
        for q in block:
            n = rng.randint(1, 3)
            frames = [
                tagged_frame(
                    rng.randint(60, 300),
                    rng,
                    src_node=1,
                    seq=q,
                    flags=(FIRST if k == 0 else 0) | (LAST if k == n - 1 else 0),
                )
                for k in range(n)
            ]
            items += [AxisItem("in", fr) for fr in frames]
            sent.append(frames)
            if rng.random() < 0.15 and len(sent) > 1:  # a duplicate container
                items += [AxisItem("dup", fr) for fr in rng.choice(sent[:-1])]
            if rng.random() < 0.1:
                items.append(AxisItem("runt", bytes(rng.randint(1, 31))))
    return items


@pyuvm.test()
class ReorderInOrderTest(uvm_test):
    def build_phase(self):
        self.model = InOrderRelease()
        cfg = AxisEnvConfig(dut=cocotb.top, model=self.model, p_in=0.5, p_out=0.2, seed=3)
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        self.env = AxisEnv("env", self)

    async def run_phase(self):
        self.raise_objection()
        dut = cocotb.top
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        await self.env.reset()
        p = test_params()
        self.items = stimulus(random.Random(5), 48, p["window"] // 2)
        await AxisSequence("seq", self.items).start(self.env.seqr)
        await self.env.drain()
        self.drops = int(dut.stat_drop_dup.value) + int(dut.stat_drop_runt.value)
        self.drop_rest = sum(
            int(getattr(dut, f"stat_{n}").value)
            for n in ("lost", "drop_window", "drop_orphan", "drop_bad", "drop_other")
        )
        self.drop_objection()

    def check_phase(self):
        assert self.drops == self.model.dropped, f"dup + runt drops {self.drops}, model {self.model.dropped}"
        assert self.drop_rest == 0, f"unexpected drops/losses: {self.drop_rest}"

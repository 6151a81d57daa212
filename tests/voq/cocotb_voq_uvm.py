"""pyuvm test of the VOQ buffer on :mod:`opengse.sim.uvm.axis_env`.

Packets of random size (some marked bad in ``tuser``) go to one queue with a random
tenant on the ``s_meta`` side channel; a background requester keeps asking for that
queue (4096 B of credit per release) so the buffer behaves as a FIFO that drops bad
frames. The traffic is paced (input idles more than the output pauses) so the
admission policy never drops a good packet: the scoreboard's model is "bad frames
vanish, everything else comes out unchanged, in order"."""

import random

import cocotb
import pyuvm
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from pyuvm import ConfigDB, uvm_test

from opengse.sim.runner import test_params
from opengse.sim.uvm.axis_env import CONFIG_KEY, AxisEnv, AxisEnvConfig, AxisItem, AxisSequence


def voq_fifo_model(item):
    return [] if item.error else [AxisItem("exp", item.data, False)]


@pyuvm.test()
class VOQFifoTest(uvm_test):
    COUNT, SEED = 200, 7

    def build_phase(self):
        self.rng = random.Random(self.SEED)
        cfg = AxisEnvConfig(
            dut=cocotb.top,
            model=voq_fifo_model,
            s_side="s_meta",
            s_side_fields=("queue", "tenant"),
            p_in=0.5,
            p_out=0.2,
            seed=self.SEED,
        )
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        self.env = AxisEnv("env", self)

    def items(self):
        r = self.rng
        for i in range(self.COUNT):
            data = bytes(r.randrange(256) for _ in range(r.randint(60, 300)))
            yield AxisItem("in", data, r.random() < 0.1, {"queue": 3, "tenant": r.randrange(4)})

    async def requester(self):
        dut = cocotb.top
        dut.s_deq_queue.value = 3
        dut.s_deq_credit.value = 4096
        dut.s_deq_valid.value = 1
        dut.m_deq_done_ready.value = 1
        dut.m_desc_ready.value = 1

    async def run_phase(self):
        self.raise_objection()
        dut = cocotb.top
        dut.s_deq_valid.value = 0
        dut.query_queue.value = 0
        dut.query_tenant.value = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        await self.env.reset()
        while not int(dut.init_done.value):
            await RisingEdge(dut.clk)
        await self.requester()
        await AxisSequence("seq", self.items()).start(self.env.seqr)
        await self.env.drain()
        for _ in range(50):
            await RisingEdge(dut.clk)
        bad = int(dut.stat_drop_bad.value)
        others = sum(int(getattr(dut, f"stat_drop_{r}").value) for r in ("full", "queue", "tenant", "dt"))
        assert others == 0, f"admission drops in a paced FIFO test: {others}"
        assert bad == self.env.scoreboard.driven - self.env.scoreboard.matches, (
            f"stat_drop_bad {bad} != bad frames"
        )
        dut.s_deq_valid.value = 0
        for _ in range(50):
            await RisingEdge(dut.clk)
        p = test_params()
        assert int(dut.stat_free_cells.value) == p["buffer_bytes"] // p["cell_bytes"]
        assert int(dut.stat_queued_cells.value) == 0 and int(dut.stat_deq_cells.value) == 0
        assert not int(dut.stat_invariant_err.value)
        self.drop_objection()

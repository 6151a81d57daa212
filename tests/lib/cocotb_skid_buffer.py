"""cocotb tests of gse_skid_buffer (rtl/lib/skid_buffer.py, as an AXI4-Stream slice).

Reference (plain Python): a register slice must deliver exactly the beats it took, in
order. A cycle monitor checks the rest of its contract every clock: at most two beats
inside, ``tready`` low exactly when two are inside (both registers full), and the
output's ``tvalid``/beat held while it is not taken.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut

TIMEOUT_US = 2000


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


class SkidBench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.sent = []
        self.errors = []
        self.out_beats = []
        self.max_inside = 0

    async def start(self):
        cocotb.start_soon(self._monitor())
        await reset_dut(self.dut)

    def frame(self, length):
        body = bytes(self.rng.randrange(256) for _ in range(length))
        user = int(self.rng.random() < 0.2)
        self.sent.append((body, user))
        self.src.send_nowait(AxiStreamFrame(body, tuser=user))

    async def _monitor(self):
        d = self.dut
        inside, clock, held = 0, 0, None
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rst.value):
                continue
            clock += 1
            s_fire = int(d.s_axis_tvalid.value) and int(d.s_axis_tready.value)
            m_valid, m_ready = int(d.m_axis_tvalid.value), int(d.m_axis_tready.value)
            beat = (
                int(d.m_axis_tdata.value),
                int(d.m_axis_tkeep.value),
                int(d.m_axis_tlast.value),
                int(d.m_axis_tuser.value),
            )
            if held is not None and (not m_valid or beat != held):
                self.errors.append(f"clock {clock}: output changed before it was taken")
            if int(d.s_axis_tready.value) != (inside < 2):
                self.errors.append(
                    f"clock {clock}: tready {int(d.s_axis_tready.value)} with {inside} beats inside"
                )
            if m_valid != (inside > 0):
                self.errors.append(f"clock {clock}: tvalid {m_valid} with {inside} beats inside")
            held = beat if m_valid and not m_ready else None
            if m_valid and m_ready:
                self.out_beats.append(clock)
            inside += int(bool(s_fire)) - int(bool(m_valid and m_ready))
            self.max_inside = max(self.max_inside, inside)

    async def check(self):
        for k, (body, user) in enumerate(self.sent):
            rx = await within(self.sink.recv(), f"output frame {k}")
            assert bytes(rx.tdata) == body, f"frame {k}: {bytes(rx.tdata).hex()} != {body.hex()}"
            got_user = rx.tuser if isinstance(rx.tuser, int) else rx.tuser[-1]
            assert got_user == user, f"frame {k}: tuser {rx.tuser} != {user}"
        for _ in range(20):
            await RisingEdge(self.dut.clk)
        assert self.sink.empty(), "extra output frames"
        assert not self.errors, "\n".join(self.errors[:10])


@cocotb.test()
async def test_random_traffic(dut):
    """Idle cycles and back-pressure at random: every beat through once, in order, and the
    skid register used (two beats inside) without ever a third."""
    tb = SkidBench(dut, 31)
    await tb.start()
    tb.src.set_pause_generator(random_pause(tb.rng, 0.3))
    tb.sink.set_pause_generator(random_pause(tb.rng, 0.4))
    for _ in range(200):
        tb.frame(tb.rng.choice([1, 2, 7, 8, 9, 60, tb.rng.randrange(1, 200)]))
    await tb.check()
    assert tb.max_inside == 2, f"at most {tb.max_inside} beats inside: the skid register unused"


@cocotb.test()
async def test_full_rate(dut):
    """No idle cycles, no back-pressure: one beat per clock out, first to last."""
    tb = SkidBench(dut, 32)
    await tb.start()
    for _ in range(50):
        tb.frame(tb.rng.choice([8, 60, 64, 65, 200]))
    await tb.check()
    beats = tb.out_beats
    assert beats[-1] - beats[0] + 1 == len(beats), (
        f"{len(beats)} beats over {beats[-1] - beats[0] + 1} clocks: bubbles"
    )

"""cocotb tests of gse_packet_demux (rtl/lib/packet_demux.py).

Reference (plain Python): each frame gets a random select 0..2**sel_bits-1 on
``s_sel``; a select below the number of outputs sends the frame to that output, any
other drops it. Every output must carry exactly its frames, whole and in order; the
dropped ones are counted in ``stat_drop_unrouted``.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.runner import test_params
from opengse.sim.valid_ready import FieldStreamSource

TIMEOUT_US = 2000


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


class DemuxBench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.n = self.p["outputs"]
        self.sel_values = 1 << len(dut.s_sel_index)
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sel = FieldStreamSource(dut, "s_sel", dut.clk, fields=["index"])
        self.sinks = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{i}"), dut.clk, dut.rst)
            for i in range(self.n)
        ]
        self.expect = [[] for _ in range(self.n)]
        self.dropped = 0
        self.in_beats = []  # clock index of every input beat
        self.errors = []

    async def start(self):
        cocotb.start_soon(self._monitor())
        await reset_dut(self.dut)

    def frame(self, serial, length, index=None):
        index = self.rng.randrange(self.sel_values) if index is None else index
        body = bytes([serial & 0xFF, serial >> 8]) + bytes(
            self.rng.randrange(256) for _ in range(max(0, length - 2))
        )
        body = body[:length]
        user = int(self.rng.random() < 0.1)
        if index < self.n:
            self.expect[index].append((body, user))
        else:
            self.dropped += 1
        self.sel.send({"index": index})
        self.src.send_nowait(AxiStreamFrame(body, tuser=user))

    async def _monitor(self):
        d = self.dut
        clock = 0
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rst.value):
                continue
            clock += 1
            if int(d.s_axis_tvalid.value) and int(d.s_axis_tready.value):
                self.in_beats.append(clock)
            moving = sum(int(getattr(d, f"m_axis_{i}_tvalid").value) for i in range(self.n))
            if moving > 1:
                self.errors.append(f"clock {clock}: {moving} outputs valid at once")

    async def check(self):
        for i, sink in enumerate(self.sinks):
            for k, (body, user) in enumerate(self.expect[i]):
                rx = await within(sink.recv(), f"output {i} frame {k}")
                data = bytes(rx.tdata)
                assert data == body, f"output {i} frame {k}: {data.hex()} != {body.hex()}"
                got_user = rx.tuser if isinstance(rx.tuser, int) else rx.tuser[-1]
                assert got_user == user, f"output {i} frame {k}: tuser {rx.tuser} != {user}"
        for _ in range(50):
            await RisingEdge(self.dut.clk)
        for i, sink in enumerate(self.sinks):
            assert sink.empty(), f"output {i}: frames beyond the expected ones"
        assert not self.sel.queue and not int(self.dut.s_sel_valid.value), "selects left over"
        assert not self.errors, "\n".join(self.errors[:10])
        got = int(self.dut.stat_drop_unrouted.value)
        assert got == self.dropped, f"stat_drop_unrouted {got} != {self.dropped}"


@cocotb.test()
async def test_random_traffic(dut):
    """Random lengths and selects (some with no output), idle cycles on the frame and
    the select stream, back-pressure on every output."""
    tb = DemuxBench(dut, 21)
    await tb.start()
    tb.src.set_pause_generator(random_pause(tb.rng, 0.3))
    tb.sel.set_pause_generator(random_pause(tb.rng, 0.4))
    for sink in tb.sinks:
        sink.set_pause_generator(random_pause(tb.rng, 0.3))
    for serial in range(300):
        tb.frame(serial, tb.rng.choice([1, 2, 7, 8, 9, 60, tb.rng.randrange(1, 300)]))
    assert tb.dropped > 10 and all(len(e) > 10 for e in tb.expect)
    await tb.check()


@cocotb.test()
async def test_full_rate(dut):
    """No idle cycles, no back-pressure: the input moves one beat per clock from the
    first beat to the last, dropped frames included."""
    tb = DemuxBench(dut, 22)
    await tb.start()
    for serial in range(120):
        tb.frame(serial, tb.rng.choice([8, 60, 64, 65, 200]))
    await tb.check()
    beats = tb.in_beats
    assert beats[-1] - beats[0] + 1 == len(beats), (
        f"{len(beats)} beats over {beats[-1] - beats[0] + 1} clocks: bubbles"
    )

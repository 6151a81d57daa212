"""cocotb tests of gse_packet_mux (rtl/lib/packet_mux.py).

The reference is plain Python, independent of the RTL: frames carry their input and
serial number, so the bench knows what each output frame must be; a cycle monitor
records, at every packet start, which inputs had a packet waiting, and checks the
winner against the policy (strict priority: the lowest such input; round-robin: the
first such input after the previous winner).
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.runner import test_params

TIMEOUT_US = 2000


async def within(coro, what, us=TIMEOUT_US):
    """Await ``coro`` for at most ``us`` microseconds; fail naming what was awaited."""
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


class MuxBench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.n = self.p["inputs"]
        self.policy = self.p["policy"]
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.srcs = [
            AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_{i}"), dut.clk, dut.rst)
            for i in range(self.n)
        ]
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.sent = [[] for _ in range(self.n)]  # (serial, bytes, tuser) per input
        self.starts = []  # (winner, waiting set) at each packet start
        self.errors = []
        self.out_beats = []  # clock index of every output beat
        self.in_beats = 0

    async def start(self):
        cocotb.start_soon(self._monitor())
        await reset_dut(self.dut)

    def frame(self, i, serial, length):
        body = bytes([i, serial >> 8, serial & 0xFF]) + bytes(
            self.rng.randrange(256) for _ in range(max(0, length - 3))
        )
        body = body[:length] if length >= 3 else body
        user = int(self.rng.random() < 0.1)
        self.sent[i].append((body, user))
        self.srcs[i].send_nowait(AxiStreamFrame(body, tuser=user))

    async def _monitor(self):
        d = self.dut
        in_pkt = [False] * self.n
        last_winner = None
        clock = 0
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rst.value):
                continue
            clock += 1
            valid = [int(getattr(d, f"s_axis_{i}_tvalid").value) for i in range(self.n)]
            ready = [int(getattr(d, f"s_axis_{i}_tready").value) for i in range(self.n)]
            last = [int(getattr(d, f"s_axis_{i}_tlast").value) for i in range(self.n)]
            if int(d.m_axis_tvalid.value) and int(d.m_axis_tready.value):
                self.out_beats.append(clock)
            moving = [i for i in range(self.n) if valid[i] and ready[i]]
            if len(moving) > 1:
                self.errors.append(f"clock {clock}: inputs {moving} move at once")
            busy = any(in_pkt)
            for i in moving:
                self.in_beats += 1
                if not in_pkt[i]:
                    if busy:
                        self.errors.append(f"clock {clock}: input {i} starts inside a packet")
                    waiting = {k for k in range(self.n) if valid[k]}
                    want = self.expected_winner(waiting, last_winner)
                    if i != want:
                        self.errors.append(
                            f"clock {clock}: input {i} won, waiting {sorted(waiting)}, "
                            f"previous {last_winner}: policy wants {want}"
                        )
                    self.starts.append((i, waiting))
                    last_winner = i
                in_pkt[i] = not last[i]

    def expected_winner(self, waiting, previous):
        if self.policy == 0 or previous is None:
            return min(waiting) if self.policy == 0 else self._rr(waiting, self.n - 1)
        return self._rr(waiting, previous)

    def _rr(self, waiting, previous):
        for k in range(1, self.n + 1):
            if (previous + k) % self.n in waiting:
                return (previous + k) % self.n
        raise AssertionError("no input waiting")

    async def collect(self):
        """Every output frame, checked against what its input sent, in input order."""
        total = sum(len(s) for s in self.sent)
        nxt = [0] * self.n
        for _ in range(total):
            rx = await within(self.sink.recv(), f"output frame {sum(nxt)} of {total}")
            data = bytes(rx.tdata)
            i = data[0] if data else None
            assert i is not None and i < self.n, f"frame from no input: {data.hex()}"
            assert nxt[i] < len(self.sent[i]), f"input {i}: more frames out than sent"
            body, user = self.sent[i][nxt[i]]
            assert data == body, f"input {i} frame {nxt[i]}: {data.hex()} != {body.hex()}"
            got_user = rx.tuser if isinstance(rx.tuser, int) else rx.tuser[-1]
            assert got_user == user, f"input {i} frame {nxt[i]}: tuser {rx.tuser} != {user}"
            nxt[i] += 1
        for _ in range(20):
            await RisingEdge(self.dut.clk)
        assert self.sink.empty(), "extra output frames"
        assert not self.errors, "\n".join(self.errors[:10])
        for i in range(self.n):
            stat = int(getattr(self.dut, f"stat_packets_{i}").value)
            assert stat == len(self.sent[i]), f"stat_packets_{i} {stat} != {len(self.sent[i])}"


@cocotb.test()
async def test_random_traffic(dut):
    """Random lengths (1..300 B), idle cycles on every input, back-pressure."""
    tb = MuxBench(dut, 11)
    await tb.start()
    for src in tb.srcs:
        src.set_pause_generator(random_pause(tb.rng, 0.3))
    tb.sink.set_pause_generator(random_pause(tb.rng, 0.3))
    for i in range(tb.n):
        for serial in range(60):
            tb.frame(i, serial, tb.rng.choice([1, 3, 7, 8, 9, 60, tb.rng.randrange(1, 300)]))
    await tb.collect()
    assert len(tb.starts) == sum(len(s) for s in tb.sent)
    contested = sum(1 for _w, waiting in tb.starts if len(waiting) > 1)
    assert contested > 20, f"only {contested} contested packet starts: the policy was not exercised"


@cocotb.test()
async def test_full_rate(dut):
    """Every input loaded, no idle cycles, no back-pressure: one beat per clock from the
    first beat to the last, across packet and input boundaries."""
    tb = MuxBench(dut, 12)
    await tb.start()
    for i in range(tb.n):
        for serial in range(20):
            tb.frame(i, serial, tb.rng.choice([8, 64, 65, 200]))
    await tb.collect()
    beats = tb.out_beats
    assert beats[-1] - beats[0] + 1 == len(beats), (
        f"{len(beats)} beats over {beats[-1] - beats[0] + 1} clocks: bubbles"
    )
    if tb.policy == 0:
        # Strict priority with every queue full: input 0 first, then 1, ...
        order = [w for w, _ in tb.starts]
        assert order == sorted(order), "strict priority did not drain input 0 first"
    else:
        order = [w for w, _ in tb.starts]
        assert order[: 2 * tb.n] == [k % tb.n for k in range(2 * tb.n)], order[: 2 * tb.n]

"""cocotb tests of gse_spine (rtl/tops/spine.py) against sim/spine_model.py.

Frames are built with scapy (opengse.sim.gse_scapy); cocotbext-axi sources and sinks
drive every fabric port, with random idle cycles on the sources and back-pressure on
the sinks. Each frame's fate comes from the plain-Python model: it must arrive exactly
once, on the model's port, with ttl one lower and otherwise byte-identical, in order
per (input, output, class) (control frames may overtake data), or be dropped and
counted under the model's reason. Every wait is bounded and names what it waited for.

Pause: each input's source is fed by a sender that obeys the spine's ``pause_<i>`` as
a link of the spine's ``delay`` would deliver it (seen ``2 x delay`` clocks late: the
pause's trip back plus the beats on the wire), so the input stores never overflow;
``stat_drop_overflow`` is checked to stay 0 everywhere.
"""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from opengse.sim.cocotb_util import drain_until, random_pause, reset_dut
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE
from opengse.sim.runner import test_params
from opengse.sim.spine_model import SpineModel
from opengse.sim.valid_ready import FieldStreamSource

TIMEOUT_US = 4000
DROP_COUNTERS = {
    "runt": "drop_runt",
    "ver": "drop_ver",
    "type": "drop_type",
    "ttl": "drop_ttl",
    "not_gse": "drop_not_gse",
    "no_route": "drop_no_route",
}


async def within(coro, what, us=TIMEOUT_US):
    try:
        return await with_timeout(coro, us, "us")
    except SimTimeoutError:
        raise AssertionError(f"timed out after {us} us waiting for {what}") from None


class SpineBench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.n, self.nodes = self.p["ports"], self.p["nodes"]
        self.rng = random.Random(seed)
        self.model = SpineModel(self.n, self.nodes, self.p["ethertype"])
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.srcs = [
            AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_{i}"), dut.clk, dut.rst)
            for i in range(self.n)
        ]
        self.sinks = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{i}"), dut.clk, dut.rst)
            for i in range(self.n)
        ]
        self.route_src = FieldStreamSource(dut, "s_route", dut.clk, fields=["node", "port"])
        self.expect = [[] for _ in range(self.n)]  # per output: (input, control, bytes)
        self.got = [[] for _ in range(self.n)]
        self.drops = [dict() for _ in range(self.n)]  # per input: reason -> count
        self.bad_out = [0] * self.n  # per output: dropped whole (tuser/len)
        self.len_err = [0] * self.n
        self.serial = 0
        self.pending = [deque() for _ in range(self.n)]  # frames the sender has not started
        self.strict = True  # start a frame only once the previous one has left
        self.pause_clocks = [0] * self.n
        self.delay = self.p["delay"]

    async def start(self):
        for o in range(self.n):
            getattr(self.dut, f"pause_in_{o}").value = 0
        await reset_dut(self.dut)
        for i in range(self.n):
            cocotb.start_soon(self._collect(i))
            cocotb.start_soon(self._sender(i))

    async def _sender(self, i):
        """Hand frames to input i's source while the pause it sees (``2 x delay``
        clocks old) is 0: at frame boundaries with ``strict``, else one frame ahead
        (the source then sends back to back: the full-rate test)."""
        d, src = self.dut, self.srcs[i]
        seen = deque([0] * (2 * self.delay))
        while True:
            await RisingEdge(d.clk)
            pause = int(getattr(d, f"pause_{i}").value)
            self.pause_clocks[i] += pause
            seen.append(pause)
            late = seen.popleft()
            free = src.idle() if self.strict else src.empty()
            if self.pending[i] and free and not late:
                frame, bad = self.pending[i].popleft()
                src.send_nowait(AxiStreamFrame(frame, tuser=int(bad)))

    async def _collect(self, o):
        while True:
            rx = await self.sinks[o].recv()
            self.got[o].append(bytes(rx.tdata))

    async def route(self, node, port):
        self.model.route(node, port)
        self.route_src.send({"node": node, "port": port})
        await within(self.route_src.wait(), f"route write {node}->{port}")
        await RisingEdge(self.dut.clk)

    def gse_frame(self, typ=0, dst_node=0, length=None, ttl=None, ver=1, bad_len=False):
        self.serial += 1
        length = length or self.rng.choice([60, 64, 65, 100, 127, 256, 300, 1000])
        hdr = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=GSE_ETHERTYPE)
        gse = GSE(
            ver=ver,
            type=typ,
            dst_node=dst_node,
            ttl=self.rng.randrange(1, 256) if ttl is None else ttl,
            seq=self.serial & 0xFFFF,
            src_node=7,
        )
        body = self.serial.to_bytes(4, "big") + bytes(
            self.rng.randrange(256) for _ in range(max(0, length - 36))
        )
        gse.len = length - 18 + (3 if bad_len else 0)
        return bytes(hdr / gse / Raw(body))[:length]

    def send(self, i, frame, bad=False):
        fate = self.model.forward(frame, bad)
        if fate[0] == "drop":
            reason = fate[1]
            if reason in ("bad", "len"):
                self.bad_out[self.model.table[int.from_bytes(frame[20:22], "big")]] += 1
                if reason == "len":
                    self.len_err[i] += 1
            else:
                self.drops[i][reason] = self.drops[i].get(reason, 0) + 1
        else:
            port, control, out = fate
            self.expect[port].append((i, control, out))
        self.pending[i].append((frame, bad))

    def total_got(self):
        return sum(len(g) for g in self.got)

    async def drain(self):
        want = sum(len(e) for e in self.expect)

        def fail(q):
            raise AssertionError(
                f"no output for {q} clocks: got {self.total_got()} of {want} expected frames"
            )

        await drain_until(self.dut.clk, lambda: self.total_got() >= want, self.total_got, 20000, 200, fail)

    def counter(self, name, i):
        return int(getattr(self.dut, f"stat_{name}_{i}").value)

    def check(self, sent):
        for o in range(self.n):
            got, exp = self.got[o], self.expect[o]
            assert len(got) == len(exp), f"output {o}: {len(got)} frames, expected {len(exp)}"
            # order per (input, class); every frame exactly once and byte-identical
            streams = {}
            for i, control, out in exp:
                streams.setdefault((i, control), []).append(out)
            pos = {k: 0 for k in streams}
            for k, frame in enumerate(got):
                hit = [
                    key for key in streams if pos[key] < len(streams[key]) and streams[key][pos[key]] == frame
                ]
                assert hit, (
                    f"output {o} frame {k} ({frame[:32].hex()}...) is not the next "
                    f"expected frame of any (input, class)"
                )
                pos[hit[0]] += 1
            assert self.counter("frames_out", o) == len(exp), f"stat_frames_out_{o}"
            assert self.counter("ctl_out", o) == sum(c for _i, c, _f in exp), f"stat_ctl_out_{o}"
            assert self.counter("drop_bad", o) == self.bad_out[o], (
                f"stat_drop_bad_{o} {self.counter('drop_bad', o)} != {self.bad_out[o]}"
            )
            assert self.counter("drop_oversize", o) == 0
            assert self.sinks[o].empty()
        for i in range(self.n):
            assert self.counter("frames_in", i) == sent[i], f"stat_frames_in_{i}"
            for reason, name in DROP_COUNTERS.items():
                want = self.drops[i].get(reason, 0)
                assert self.counter(name, i) == want, f"stat_{name}_{i} {self.counter(name, i)} != {want}"
            assert self.counter("err_len", i) == self.len_err[i], f"stat_err_len_{i}"
            assert self.counter("drop_overflow", i) == 0, (
                f"stat_drop_overflow_{i} {self.counter('drop_overflow', i)}"
            )


async def default_routes(tb, missing=(3,)):
    for node in range(tb.nodes):
        if node not in missing:
            await tb.route(node, node % tb.n)


@cocotb.test()
async def test_random_traffic(dut):
    """All ports at once: DATA and control frames to every output, and every kind of
    malformed frame, with idle cycles on the inputs and back-pressure on the outputs."""
    tb = SpineBench(dut, 1)
    await tb.start()
    await default_routes(tb)
    for s in tb.srcs:
        s.set_pause_generator(random_pause(tb.rng, 0.2))
    for s in tb.sinks:
        s.set_pause_generator(random_pause(tb.rng, 0.3))
    sent = [0] * tb.n
    rng = tb.rng
    for _ in range(100):
        for i in range(tb.n):
            kind = rng.random()
            node = rng.randrange(tb.nodes)
            node = node if node != 3 else 4
            if kind < 0.55:
                f, bad = tb.gse_frame(0, node), False
            elif kind < 0.75:
                f, bad = tb.gse_frame(rng.choice([1, 2, 3]), node, length=64), False
            else:
                fault = rng.choice(["ver", "type", "ttl", "runt", "bad", "route", "len", "not_gse", "node"])
                bad = fault == "bad"
                if fault == "ver":
                    f = tb.gse_frame(0, node, ver=2)
                elif fault == "type":
                    f = tb.gse_frame(rng.randrange(4, 16), node, length=64)
                elif fault == "ttl":
                    f = tb.gse_frame(0, node, ttl=0)
                elif fault == "runt":
                    f = tb.gse_frame(0, node)[: rng.choice([1, 8, 13, 20, 24, 31])]
                elif fault == "route":
                    f = tb.gse_frame(0, 3)
                elif fault == "node":
                    f = tb.gse_frame(0, tb.nodes + rng.randrange(100))
                elif fault == "len":
                    f = tb.gse_frame(0, node, bad_len=True)
                elif fault == "not_gse":
                    f = bytes(Ether(type=0x0800) / Raw(bytes(60)))
                else:
                    f = tb.gse_frame(rng.choice([0, 1]), node)
            tb.send(i, f, bad)
            sent[i] += 1
    assert all(len(e) > 20 for e in tb.expect)
    assert all(sum(d.values()) > 5 for d in tb.drops) and all(tb.bad_out)
    await tb.drain()
    tb.check(sent)


@cocotb.test()
async def test_control_overtakes_data(dut):
    """Output 0 stalled with data queued from input 1; a GRANT from input 2 to the same
    output leaves before all but (at most) the data frame already started."""
    tb = SpineBench(dut, 2)
    await tb.start()
    await default_routes(tb)
    tb.sinks[0].pause = True
    datas = [tb.gse_frame(0, 0, length=400) for _ in range(8)]
    for f in datas:
        tb.send(1, f)
    for _ in range(8 * 60):
        await RisingEdge(dut.clk)
    grant = tb.gse_frame(2, 4, length=64)
    tb.send(2, grant)
    for _ in range(100):
        await RisingEdge(dut.clk)
    assert not tb.got[0], "output 0 moved while paused"
    tb.sinks[0].pause = False
    await tb.drain()
    want = tb.model.forward(grant)[2]
    assert want in tb.got[0][:2], f"GRANT at position {tb.got[0].index(want)} of {len(tb.got[0])}"
    tb.check([0, 8, 1, 0] + [0] * (tb.n - 4))


@cocotb.test()
async def test_route_change(dut):
    """A route written at run time applies to later frames (node 5: port 1, then 2, then
    0); removing it (port = N) drops them as no route. The read-back shows each entry."""
    tb = SpineBench(dut, 3)
    await tb.start()
    dut.route_rd_node.value = 5
    await RisingEdge(dut.clk)
    assert int(dut.route_rd_port.value) == tb.n, "node 5 routed after reset"
    for port in (1, 2, 0, tb.n):
        await tb.route(5, port)
        await ReadOnly()
        assert int(dut.route_rd_port.value) == port, f"read-back {dut.route_rd_port.value} != {port}"
        await RisingEdge(dut.clk)
        for _ in range(5):
            tb.send(0, tb.gse_frame(0, 5))
        await tb.drain()
        if port < tb.n:
            assert len(tb.got[port]) == 5, f"port {port}: {len(tb.got[port])} frames, not 5"
    assert [len(g) for g in tb.got] == [5, 5, 5] + [0] * (tb.n - 3), [len(g) for g in tb.got]
    assert tb.counter("drop_no_route", 0) == 5
    tb.check([20] + [0] * (tb.n - 1))


@cocotb.test()
async def test_full_rate(dut):
    """A permutation (input i to output i+1 mod N), no idle cycles, no back-pressure:
    every input takes one beat per clock and every output sends one beat per clock from
    its first beat to its last (store-and-forward adds latency, not bubbles)."""
    tb = SpineBench(dut, 5)
    tb.strict = False  # frames back to back (pause never rises here)
    await tb.start()
    await default_routes(tb, missing=())
    beats_in = [[] for _ in range(tb.n)]
    beats_out = [[] for _ in range(tb.n)]

    async def monitor():
        clock = 0
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            clock += 1
            for i in range(tb.n):
                if int(getattr(dut, f"s_axis_{i}_tvalid").value) and int(
                    getattr(dut, f"s_axis_{i}_tready").value
                ):
                    beats_in[i].append(clock)
                if int(getattr(dut, f"m_axis_{i}_tvalid").value) and int(
                    getattr(dut, f"m_axis_{i}_tready").value
                ):
                    beats_out[i].append(clock)

    cocotb.start_soon(monitor())
    for i in range(tb.n):
        for _ in range(12):
            tb.send(i, tb.gse_frame(0, (i + 1) % tb.n, length=1000))
    await tb.drain()
    tb.check([12] * tb.n)
    for i in range(tb.n):
        o = (i + 1) % tb.n
        dut._log.info(
            "input %d -> output %d: first beat in at clock %d, first beat out "
            "at clock %d (%d clocks, 125-beat frames)",
            i,
            o,
            beats_in[i][0],
            beats_out[o][0],
            beats_out[o][0] - beats_in[i][0],
        )
    for name, beats in (("input", beats_in), ("output", beats_out)):
        for i, b in enumerate(beats):
            assert len(b) == 12 * 125, f"{name} {i}: {len(b)} beats"
            span = b[-1] - b[0] + 1
            assert span == len(b), f"{name} {i}: {len(b)} beats over {span} clocks"


@cocotb.test()
async def test_lossless_hot_spot(dut):
    """Every input sends jumbo frames to output 0 while it is stalled, more than its
    (input, output) queue (16 KB) and its pause store's XOFF hold together (3 x 9000 B):
    inputs are paused, nothing is dropped, all arrive when it resumes."""
    tb = SpineBench(dut, 4)
    await tb.start()
    await default_routes(tb)
    tb.sinks[0].pause = True
    for i in range(tb.n):
        for _ in range(3):
            tb.send(i, tb.gse_frame(0, 0, length=9000))
    for _ in range(8000):
        await RisingEdge(dut.clk)
    moved = sum(len(g) for g in tb.got)
    held = [i for i in range(tb.n) if int(getattr(dut, f"pause_{i}").value)]
    assert moved == 0 and held, f"output 0 stalled: {moved} frames out, inputs paused {held}"
    tb.sinks[0].pause = False
    await tb.drain()
    tb.check([3] * tb.n)


@cocotb.test()
async def test_oversize_frame(dut):
    """A frame longer than its (input, output) data queue (40000 B > 16 KB) can never be stored whole:
    it is dropped and counted in drop_oversize, and the frames around it pass."""
    tb = SpineBench(dut, 6)
    await tb.start()
    await default_routes(tb, missing=())
    before, after = tb.gse_frame(0, 1, length=1000), tb.gse_frame(0, 1, length=1000)
    big = tb.gse_frame(0, 1, length=40000)
    tb.send(0, before)
    tb.pending[0].append((big, False))  # the model has no queue size
    tb.send(0, after)
    await tb.drain()
    assert tb.counter("drop_oversize", 1) == 1, "stat_drop_oversize_1"
    assert tb.got[1] == [e[2] for e in tb.expect[1]], "frames around the oversize one"
    assert tb.counter("frames_in", 0) == 3 and tb.counter("frames_out", 1) == 2


@cocotb.test()
async def test_paused_output_backs_up(dut):
    """``pause_in_0`` held at 1: nothing starts on output 0; the frames for it fill its
    queue, then every input's store, and every input raises ``pause_<i>``; frames for
    output 1 queued behind them wait too (head-of-line blocking, as PFC). Nothing
    overflows. Released: everything arrives, pause falls. Then ``pause_in_0`` in random
    runs: no frame starts on output 0 in a clock with ``pause_in_0`` = 1 unless it was
    already offered; the counters match what was seen."""
    tb = SpineBench(dut, 7)
    await tb.start()
    await default_routes(tb, missing=())
    starts_paused, errors, pause_in = [0], [], [1]
    dut.pause_in_0.value = 1

    async def monitor():
        in_frame = offered = False
        while True:
            await RisingEdge(dut.clk)
            dut.pause_in_0.value = pause_in[0]
            await ReadOnly()
            v, r = int(dut.m_axis_0_tvalid.value), int(dut.m_axis_0_tready.value)
            if v and r and not in_frame and pause_in[0]:
                starts_paused[0] += 1
                if not offered:
                    errors.append("a frame started on output 0 while pause_in_0 was 1")
            offered = bool(v and not r)
            if v and r:
                in_frame = not int(dut.m_axis_0_tlast.value)

    cocotb.start_soon(monitor())
    for i in range(tb.n):
        for _ in range(5):
            tb.send(i, tb.gse_frame(0, 4 * tb.rng.randrange(tb.nodes // 4), length=9000))
        for _ in range(3):
            tb.send(i, tb.gse_frame(0, 1, length=1000))
    for _ in range(40000):
        await RisingEdge(dut.clk)
    paused = [int(getattr(dut, f"pause_{i}").value) for i in range(tb.n)]
    assert not tb.got[0] and not tb.got[1], (
        f"frames left while output 0 was paused: {len(tb.got[0])}, {len(tb.got[1])}"
    )
    assert all(paused), f"inputs' pause {paused}: not every input backed up"
    assert tb.counter("held_cycles", 0) > 30000, f"stat_held_cycles_0 {tb.counter('held_cycles', 0)}"
    for i in range(tb.n):
        assert tb.counter("drop_overflow", i) == 0, f"input {i} overflowed"
    # release in random runs of pause
    done = cocotb.start_soon(tb.drain())
    clock = 0
    while not done.done():
        clock += 1
        if clock % tb.rng.randrange(20, 400) == 0:
            pause_in[0] ^= 1
        await RisingEdge(dut.clk)
        assert clock < 2_000_000, "waited 2000000 clocks for the backed-up frames"
    pause_in[0] = 0
    for _ in range(10):
        await RisingEdge(dut.clk)
    assert not errors, errors[0]
    tb.check([8] * tb.n)
    assert [int(getattr(dut, f"pause_{i}").value) for i in range(tb.n)] == [0] * tb.n, "pause still up"
    for i in range(tb.n):
        assert tb.counter("pause_cycles", i) == tb.pause_clocks[i], (
            f"stat_pause_cycles_{i} {tb.counter('pause_cycles', i)} != {tb.pause_clocks[i]} clocks seen"
        )
    dut._log.info(
        "pause clocks per input %s; output 0 held %d clocks", tb.pause_clocks, tb.counter("held_cycles", 0)
    )


@cocotb.test()
async def test_merge_does_not_block_inputs(dut):
    """Every input sends back to back, alternating frames for a hot output 0 and for its
    own output (i + 1, or 1 for the input whose next is 0): output 0 merges N inputs at
    once. Each (input, output) pair has its own data queue, so an input whose frame for
    output 0 waits for the other inputs' frames still passes its frames for other outputs
    and takes one beat per clock into its queues: no input store rises to XOFF (no
    ``pause_<i>``) while the queues have room (here at most 6000 B per pair). A spine
    with one data queue per output, fed by a round-robin of the inputs, writes one input
    at a time and so drains each input at 1/N of the rate while they all send to output
    0 (head-of-line blocking at the merge: the all-to-all pause cycle, docs/leaf.md)."""
    tb = SpineBench(dut, 8)
    tb.strict = False
    await tb.start()
    await default_routes(tb, missing=())
    for i in range(tb.n):
        other = (i + 1) % tb.n or 1
        for k in range(12):
            tb.send(i, tb.gse_frame(0, 0 if k % 2 == 0 else other, length=1000))
    await tb.drain()
    tb.check([12] * tb.n)
    assert tb.pause_clocks == [0] * tb.n, f"inputs paused {tb.pause_clocks} clocks"
    for i in range(tb.n):
        assert tb.counter("pause_cycles", i) == 0, f"stat_pause_cycles_{i}"

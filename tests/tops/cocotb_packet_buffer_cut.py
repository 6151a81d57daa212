"""cocotb tests of PacketBuffer's cut-through admission (``drop_full`` and ``length_at``
(26, 18): the GSE tag's ``len`` + 18 bytes is the packet's length), the leaf's
per-uplink admission queues, against a plain-Python model.

The model (``depth`` beats, ``bpb`` bytes per beat, the length field complete at beat
``DEC`` = 27 // bpb): ``tready`` is always 1. With the output stalled, a packet is kept
while its beats fit behind those kept so far; one that does not is dropped whole and
counted in ``stat_drop_full``. A packet of more than ``DEC`` beats is admitted at beat
``DEC`` and cannot be taken back: a bad one (``tuser`` on its last beat) leaves with
``tuser`` on its last beat and counts in ``stat_bad_out``; a packet that ends by beat
``DEC`` is stored whole first, a bad one dropped and counted in ``stat_drop_bad``. A
packet whose ``len`` understates its beats is cut where only one free beat is left, and
its last beat is stored there, marked bad. Every wait is bounded."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import drain_until, random_pause, reset_dut
from opengse.sim.runner import test_params

LEN_AT, EXTRA = 26, 18


class Bench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.depth, self.bpb = self.p["depth"], self.p["data_width"] // 8
        self.dec = (LEN_AT + 1) // self.bpb  # the beat that completes the length field
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.got = []  # (bytes, tuser of the last beat)
        self.not_ready = [0]
        self.max_level = [0]
        self.clock = [0]
        self.in_beats, self.out_beats = [], []  # clock of every beat taken / sent

    async def start(self):
        cocotb.start_soon(self._watch())
        await reset_dut(self.dut)
        cocotb.start_soon(self._collect())

    async def _collect(self):
        while True:
            rx = await self.sink.recv()
            user = rx.tuser[-1] if isinstance(rx.tuser, list) else rx.tuser
            self.got.append((bytes(rx.tdata), int(user or 0)))

    async def _watch(self):
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            self.clock[0] += 1
            if not int(d.s_axis_tready.value):
                self.not_ready[0] += 1
            if int(d.s_axis_tvalid.value) and int(d.s_axis_tready.value):
                self.in_beats.append(self.clock[0])
            if int(d.m_axis_tvalid.value) and int(d.m_axis_tready.value):
                self.out_beats.append(self.clock[0])
            self.max_level[0] = max(self.max_level[0], int(d.level.value))

    def packet(self, serial, beats, claim=None):
        """A packet of ``beats`` beats (at least 4 bytes) whose length field says
        ``claim`` beats' worth (default: its own length)."""
        nbytes = max(4, (beats - 1) * self.bpb + self.rng.randrange(1, self.bpb + 1))
        b = bytearray(self.rng.randrange(256) for _ in range(nbytes))
        b[:4] = serial.to_bytes(4, "big")
        if nbytes >= LEN_AT + 2:
            length = nbytes if claim is None else claim * self.bpb
            b[LEN_AT : LEN_AT + 2] = (length - EXTRA).to_bytes(2, "big")
        return bytes(b)

    def beats(self, pkt):
        return -(-len(pkt) // self.bpb)

    def counter(self, name):
        return int(getattr(self.dut, f"stat_{name}").value)

    async def drain(self, want, what="packets"):
        def fail(quiet):
            raise AssertionError(f"no output for {quiet} clocks: got {len(self.got)} of {want} {what}")

        await drain_until(self.dut.clk, lambda: len(self.got) >= want, lambda: len(self.got), 5000, 50, fail)

    async def wait_sent(self, limit=200_000):
        for _ in range(limit):
            if self.src.empty() and self.src.idle():
                return
            await RisingEdge(self.dut.clk)
        raise AssertionError(f"the source did not finish sending within {limit} clocks")

    async def settle(self, clocks=20):
        for _ in range(clocks):
            await RisingEdge(self.dut.clk)


@cocotb.test()
async def test_stalled_output_admits_what_fits(dut):
    """Output stalled: packets are kept exactly while their beats fit (the model), the
    rest dropped whole (stat_drop_full); a bad packet admitted before its end is kept and
    leaves marked bad (stat_bad_out), a bad one that ended before its admission beat is
    dropped (stat_drop_bad); level is the kept beats; tready never falls. Released:
    exactly the kept packets leave, in order, byte-identical, tuser as the model says."""
    tb = Bench(dut, 1)
    await tb.start()
    tb.sink.pause = True
    kept, used, full, bad_in, bad_out = [], 0, 0, 0, 0
    sizes = [1, 2, tb.dec, tb.dec + 1, tb.dec + 2, 7, 12, 20]
    for k in range(30):
        n = tb.rng.choice(sizes)
        pkt = tb.packet(k, n)
        is_bad = k % 5 == 3
        if used + n > tb.depth:
            full += 1
        elif is_bad and n <= tb.dec + 1:
            bad_in += 1  # ended by the admission beat: still all its own, dropped
        else:
            kept.append((pkt, int(is_bad)))
            used += n
            bad_out += is_bad
        tb.src.send_nowait(AxiStreamFrame(pkt, tuser=int(is_bad)))
    await tb.wait_sent()
    await tb.settle()
    assert full > 0 and bad_out > 0 and bad_in > 0, "the model must keep, drop and mark packets here"
    assert not tb.got, "a packet left while the output was stalled"
    assert tb.counter("drop_full") == full, f"stat_drop_full {tb.counter('drop_full')} != {full}"
    assert tb.counter("drop_bad") == bad_in, f"stat_drop_bad {tb.counter('drop_bad')} != {bad_in}"
    assert tb.counter("bad_out") == bad_out, f"stat_bad_out {tb.counter('bad_out')} != {bad_out}"
    assert tb.counter("drop_oversize") == 0
    assert int(dut.level.value) == used, f"level {int(dut.level.value)} != {used} beats kept"
    tb.sink.pause = False
    await tb.drain(len(kept))
    assert tb.got == kept, "the kept packets, in order, byte-identical, tuser as the model"
    assert int(dut.level.value) == 0
    assert tb.not_ready[0] == 0, f"tready was 0 in {tb.not_ready[0]} clocks"


@cocotb.test()
async def test_cut_through(dut):
    """A packet leaves while it arrives: with the output free and the input idle every
    other clock, its first beat leaves 2 clocks after the beat that completes its length
    field, long before its last beat arrives, the beats up to it one per clock; the
    output catches up with the input, the last beat leaves 2 clocks after it came."""
    tb = Bench(dut, 2)
    await tb.start()
    n = tb.depth - 4
    pkt = tb.packet(7, n)
    tb.src.set_pause_generator(iter([False, True] * (2 * n)))
    tb.src.send_nowait(AxiStreamFrame(pkt))
    await tb.drain(1, "packet")
    assert tb.got == [(pkt, 0)]
    assert len(tb.in_beats) == len(tb.out_beats) == n, (len(tb.in_beats), len(tb.out_beats))
    first_out = tb.out_beats[0] - tb.in_beats[tb.dec]
    assert first_out == 2, f"first beat left {first_out} clocks after the admission beat, not 2"
    head = [o - tb.out_beats[0] for o in tb.out_beats[: tb.dec + 1]]
    assert head == list(range(tb.dec + 1)), f"the beats up to admission left at {head}, not one per clock"
    lags = [o - i for i, o in zip(tb.in_beats, tb.out_beats)][tb.dec :]
    assert max(lags) <= tb.dec + 2 and lags[-1] == 2, f"lags after admission {lags}: no catching up to 2"
    assert tb.out_beats[0] < tb.in_beats[-1] - n, "the packet did not pass cut-through"


@cocotb.test()
async def test_understated_length_is_cut_and_marked(dut):
    """Output stalled. A packet whose ``len`` understates its beats is admitted, cut where
    one free beat is left, and its last beat takes that beat, marked bad (stat_bad_out):
    the buffer never overfills and nothing waits. The next packet finds no room (dropped
    full). Released: the packets before it, then the cut packet (its first beats and its
    last, tuser 1). Then all room is back: a packet of ``depth`` beats is admitted and
    leaves whole, after one whose ``len`` says more than ``depth`` beats was dropped as
    oversize."""
    tb = Bench(dut, 3)
    await tb.start()
    tb.sink.pause = True
    before = [tb.packet(k, 10) for k in range(3)]
    liar = tb.packet(3, tb.depth, claim=tb.dec + 3)
    after = tb.packet(4, 2)
    for pkt in before + [liar, after]:
        tb.src.send_nowait(AxiStreamFrame(pkt))
    await tb.wait_sent()
    await tb.settle()
    room = tb.depth - 30
    assert tb.max_level[0] <= tb.depth, f"level reached {tb.max_level[0]} > depth"
    assert int(dut.level.value) == tb.depth, f"level {int(dut.level.value)}, not full"
    assert (tb.counter("bad_out"), tb.counter("drop_full")) == (1, 1)
    tb.sink.pause = False
    await tb.drain(4)
    cut = liar[: (room - 1) * tb.bpb] + liar[(tb.beats(liar) - 1) * tb.bpb :]
    assert tb.got == [(p, 0) for p in before] + [(cut, 1)], "the packets before, then the cut one"
    assert int(dut.level.value) == 0, "room leaked"
    whole = tb.packet(5, tb.depth)
    tb.sink.pause = True
    tb.src.send_nowait(AxiStreamFrame(tb.packet(6, tb.dec + 2, claim=tb.depth + 1)))
    tb.src.send_nowait(AxiStreamFrame(whole))
    await tb.wait_sent()
    await tb.settle()
    assert tb.counter("drop_oversize") == 1, tb.counter("drop_oversize")
    tb.sink.pause = False
    await tb.drain(5)
    assert tb.got[-1] == (whole, 0), "a packet of depth beats after the cut one"
    assert tb.not_ready[0] == 0, f"tready was 0 in {tb.not_ready[0]} clocks"


@cocotb.test()
async def test_random_back_pressure(dut):
    """Random packets (some bad, some whose ``len`` understates them), random idle on the
    input, random back-pressure on the output: tready always 1, level never above depth;
    what leaves is a subset of the packets in order, each once: a good one byte-identical
    with tuser 0, a bad one byte-identical with tuser 1, an understated one whole or cut
    (its first beats and its last) with tuser 1 when cut; every packet sent is delivered
    or counted once; at the end the buffer is empty (no room leaks)."""
    tb = Bench(dut, 4)
    await tb.start()
    tb.src.set_pause_generator(random_pause(tb.rng, 0.2))
    tb.sink.set_pause_generator(random_pause(tb.rng, 0.6))
    sent = []  # (packet, bad, understated)
    for k in range(300):
        n = tb.rng.randrange(1, 3 * tb.depth // 4)
        liar = n > tb.dec + 2 and tb.rng.random() < 0.05
        pkt = tb.packet(k, n, claim=tb.dec + 1 if liar else None)
        is_bad = tb.rng.random() < 0.05
        sent.append((pkt, is_bad, liar))
        tb.src.send_nowait(AxiStreamFrame(pkt, tuser=int(is_bad)))
    await tb.wait_sent()
    counted = ("drop_full", "drop_bad", "drop_oversize")

    def settled():
        return len(tb.got) + sum(tb.counter(c) for c in counted) >= len(sent)

    await drain_until(dut.clk, settled, lambda: len(tb.got), 5000, 100, lambda q: None)
    it = iter(sent)
    marked = 0
    for n, (pkt, user) in enumerate(tb.got):
        serial = pkt[:4]
        for want, is_bad, liar in it:
            if want[:4] == serial:
                break
        else:
            raise AssertionError(f"output packet {n} is not a later packet sent (order)")
        if pkt == want:
            assert user == int(is_bad), f"output packet {n}: tuser {user}, sent bad {is_bad}"
        else:
            assert liar and user == 1, f"output packet {n} differs from what was sent"
            last = want[(tb.beats(want) - 1) * tb.bpb :]
            assert pkt.endswith(last) and want.startswith(pkt[: -len(last)]), f"packet {n}: not a cut"
        marked += user
    delivered, dropped = len(tb.got), sum(tb.counter(c) for c in counted)
    assert delivered + dropped == len(sent), f"{delivered} out + {dropped} counted != {len(sent)} sent"
    assert tb.counter("bad_out") == marked, f"stat_bad_out {tb.counter('bad_out')} != {marked} marked"
    assert tb.counter("drop_full") > 0, "the back-pressure must overfill the buffer here"
    assert int(dut.level.value) == 0, "room leaked"
    assert tb.max_level[0] <= tb.depth
    assert tb.not_ready[0] == 0, f"tready was 0 in {tb.not_ready[0]} clocks"
    dut._log.info("%d sent: %d out (%d marked bad), %d dropped", len(sent), delivered, marked, dropped)

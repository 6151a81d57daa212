"""cocotb tests of gse_traffic_gen (rtl/tb/traffic_gen.py) against sim/traffic_model.py.

The model says which frames (flow, destination, seq, size) the generator sends and
builds each with scapy from the send timestamp the frame carries; every frame must
match byte for byte and parse as IPv4/UDP with the right addresses and ports.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSink
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from opengse.sim.cocotb_util import random_pause, recv_within, reset_dut, wait_until
from opengse.sim.runner import test_params
from opengse.sim.traffic_model import (
    ROCE_PORT,
    GenConfig,
    frame_bytes,
    generator_frames,
    parse_frame,
    udp_sport,
)


RATE_ONE = 1 << 16  # the generator's ``rate`` of full line rate (one beat every clock)
BUCKET = 2 * RATE_ONE  # its token bucket's depth


class GenBench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        self.params = test_params()
        self.lanes = self.params["data_width"] // 8
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.beats = 0
        self.clocks = 0
        self.gaps = 0  # clocks without a beat between the first and the last beat seen
        self.pause_prob = 0.0
        self.rate, self.starts, self.strict = RATE_ONE, 0, False

    async def start(self, cfg, rate=1 << 16):
        d = self.dut
        d.enable.value = 0
        d.pause.value = 0
        d.s_dst_valid.value = 0
        d.host.value = cfg.host
        d.frame_min.value = cfg.frame_min
        d.frame_max.value = cfg.frame_max if cfg.frame_max is not None else cfg.frame_min
        d.rate.value = self.rate = rate
        d.flows.value = cfg.n_flows
        d.random.value = int(cfg.random)
        d.tenant.value = cfg.tenant
        d.tc.value = cfg.tc
        d.seed.value = cfg.seed
        await reset_dut(d)
        for index, dst in enumerate(cfg.table):
            d.s_dst_index.value, d.s_dst_dst.value, d.s_dst_valid.value = index, dst, 1
            await RisingEdge(d.clk)
            await wait_until(d.clk, lambda: int(d.s_dst_ready.value), f"s_dst_ready for entry {index}", 1000)
            await RisingEdge(d.clk)
            d.s_dst_valid.value = 0
        cocotb.start_soon(self._monitor())
        d.enable.value = 1

    async def _monitor(self):
        """Counts beats, clocks and gaps, and checks the token bucket against its model:
        the credit after clock edge ``k`` is ``T[k+1] = min(T[k] + rate - RATE_ONE *
        fire[k], BUCKET)`` (``BUCKET`` when the monitor starts: the generator was idle
        for longer than it takes to fill); a frame whose first beat appears after
        edge ``k + 1`` was started in clock ``k``, which needs ``T[k] >= 0``. With
        ``strict`` (no pause; frames long enough that the next one is always prepared),
        also the converse: once a frame has started, a clock that can start one (no frame
        on the bus, or its last beat taken) with ``T[k] >= 0`` starts one."""
        d = self.dut
        before, tokens, in_frame = BUCKET, BUCKET, False  # T[k-1], T[k]
        owed = False  # a start is due to show now
        while True:
            await RisingEdge(d.clk)
            d.pause.value = int(self.rng.random() < self.pause_prob)
            await ReadOnly()
            self.clocks += 1
            valid, ready = int(d.m_axis_tvalid.value), int(d.m_axis_tready.value)
            fire = valid and ready
            starts = self.starts
            if valid and not in_frame:
                assert before >= 0, f"a frame started on credit {before} < 0 (rate {self.rate})"
                in_frame = True
                self.starts += 1
            assert not owed or self.starts > starts, f"no frame started on credit {before} >= 0"
            last_taken = fire and int(d.m_axis_tlast.value)
            if last_taken:
                in_frame = False
            owed = self.strict and self.starts > 0 and (not valid or last_taken) and tokens >= 0
            if fire:
                self.beats += 1
            elif self.beats:
                self.gaps += 1
            before, tokens = tokens, min(tokens + self.rate - RATE_ONE * fire, BUCKET)

    async def expect(self, cfg, count):
        want = generator_frames(cfg, count)
        for k, fr in enumerate(want):
            rx = await recv_within(self.sink, f"frame {k}", clocks=50_000)
            raw = bytes(rx.tdata)
            user = rx.tuser if isinstance(rx.tuser, int) else max(rx.tuser or [0])
            assert not user, f"frame {k}: tuser set"
            got = parse_frame(raw)
            assert got is not None, f"frame {k} is not IPv4/UDP to {ROCE_PORT}: {raw[:64].hex()}"
            expected = frame_bytes(cfg, fr, got["ts"])
            if raw != expected:
                at = next((i for i, (x, y) in enumerate(zip(raw, expected)) if x != y), "length")
                raise AssertionError(
                    f"frame {k} ({fr}): bytes differ at {at}\n got {raw[:64].hex()}"
                    f"\nwant {expected[:64].hex()}"
                )
            pkt = Ether(raw)
            ref = IP(bytes(pkt[IP]))
            del ref.chksum
            assert IP(bytes(ref))[IP].chksum == pkt[IP].chksum, f"frame {k}: IPv4 header checksum wrong"
            assert pkt[IP].src == f"10.0.0.{cfg.host}" and pkt[IP].dst == f"10.0.0.{fr['dst']}"
            assert (
                pkt.src == f"02:00:00:00:00:{cfg.host:02x}" and pkt.dst == f"02:00:00:00:00:{fr['dst']:02x}"
            )
            assert pkt[UDP].sport == udp_sport(cfg.seed, cfg.host, fr["flow"]) and pkt[UDP].dport == ROCE_PORT
            assert got["check_ok"] and got["filler_ok"] and got["seq"] == fr["seq"]
        return want


@cocotb.test()
async def test_frames_random_sizes(dut):
    """Random flows and sizes 60..1600, random back-pressure and pause: every frame as
    the model says, byte for byte; counters match."""
    tb = GenBench(dut, 1)
    cfg = GenConfig(
        host=5,
        table=[1, 9, 13, 2, 7],
        frame_min=60,
        frame_max=1600,
        random=True,
        tenant=3,
        tc=5,
        seed=0x1234567,
    )
    tb.sink.set_pause_generator(random_pause(tb.rng, 0.3))
    tb.pause_prob = 0.05
    await tb.start(cfg)
    want = await tb.expect(cfg, 120)
    d = dut
    d.enable.value = 0
    await wait_until(d.clk, lambda: not int(d.m_axis_tvalid.value), "the last frame to end", 20_000)
    for _ in range(10):
        await RisingEdge(d.clk)
    extra = 0
    while not tb.sink.empty():
        tb.sink.recv_nowait()
        extra += 1
    frames = int(d.stat_frames.value)
    assert frames == 120 + extra, f"stat_frames {frames}, received {120 + extra}"
    sent = generator_frames(cfg, frames)
    assert int(d.stat_bytes.value) == sum(f["size"] for f in sent), "stat_bytes"
    assert int(d.stat_paused.value) > 0, "pause never held a frame"
    assert len({f["flow"] for f in want}) == 5 and len({f["size"] for f in want}) > 50


@cocotb.test()
async def test_full_rate_fixed_size(dut):
    """Fixed 60-byte frames (the shortest), flows in turn, no back-pressure: one beat per
    clock, no bubble between frames."""
    tb = GenBench(dut, 2)
    cfg = GenConfig(host=1, table=[3, 4], frame_min=60, seed=0)
    await tb.start(cfg)
    await tb.expect(cfg, 200)
    assert tb.gaps == 0, f"{tb.gaps} idle clocks between beats at full rate"
    cfg9 = GenConfig(host=2, table=[6], frame_min=9000, frame_max=9000, seed=3, tenant=4095, tc=7)
    tb2 = tb
    dut.enable.value = 0
    await tb2.start(cfg9)
    tb2.beats = tb2.gaps = 0
    await tb2.expect(cfg9, 3)
    assert tb2.gaps == 0


@cocotb.test()
async def test_offered_rate(dut):
    """rate = 0.3 of line rate with 1500-byte frames, no back-pressure: the beats sent in
    40000 clocks are 0.3 of them within one frame (a count, not a timing)."""
    tb = GenBench(dut, 3)
    cfg = GenConfig(host=4, table=[8], frame_min=1500, seed=9)
    rate = round(0.3 * 65536)
    await tb.start(cfg, rate=rate)
    await wait_until(dut.clk, lambda: tb.beats > 0, "the first beat", 2000)
    b0, c0 = tb.beats, tb.clocks
    for _ in range(40_000):
        await RisingEdge(dut.clk)
    beats, clocks = tb.beats - b0, tb.clocks - c0
    frame_beats = -(-1500 // tb.lanes)
    assert abs(beats - clocks * rate / 65536) <= frame_beats, f"{beats} beats in {clocks} clocks at rate 0.3"
    assert tb.gaps > 0


@cocotb.test()
async def test_token_bucket(dut):
    """rate = 0.7 with random 60..200-byte frames: every start as the token-bucket model
    says, on the clock (``strict``), and the count exact to a frame; then random
    back-pressure: never a start on negative credit, never more than the rate."""
    tb = GenBench(dut, 5)
    cfg = GenConfig(host=3, table=[1, 2], frame_min=60, frame_max=200, random=True, seed=77)
    rate = round(0.7 * RATE_ONE)
    tb.strict = True
    await tb.start(cfg, rate=rate)
    await wait_until(dut.clk, lambda: tb.beats > 0, "the first beat", 2000)
    frame_beats = -(-200 // tb.lanes)
    for phase in ("no back-pressure", "back-pressure"):
        b0, c0, s0 = tb.beats, tb.clocks, tb.starts
        for _ in range(20_000):
            await RisingEdge(dut.clk)
        beats, clocks = tb.beats - b0, tb.clocks - c0
        due, why = clocks * rate / RATE_ONE, f"{phase}: {beats} beats in {clocks} clocks"
        assert tb.starts - s0 > 20, f"{phase}: only {tb.starts - s0} frames"
        assert beats <= due + frame_beats, why
        if phase == "no back-pressure":
            assert beats >= due - frame_beats, why
            tb.strict = False
            tb.sink.set_pause_generator(random_pause(tb.rng, 0.5))


@cocotb.test()
async def test_no_flows(dut):
    """flows = 0: nothing is sent, nothing hangs."""
    tb = GenBench(dut, 4)
    cfg = GenConfig(host=4, table=[8], frame_min=100, flows=0)
    await tb.start(cfg)
    for _ in range(2000):
        await RisingEdge(dut.clk)
    assert tb.beats == 0 and int(dut.stat_frames.value) == 0

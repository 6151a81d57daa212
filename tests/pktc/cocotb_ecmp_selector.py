"""cocotb tests of gse_ecmp_selector (rtl/pktc/ecmp_selector.py) against sim/ecmp_model.py.

Frames are built with scapy (Ether / IP / UDP or TCP or ICMP, fragments, IP options,
ARP, plain untagged frames, runts) and tagged by the reference tagger of
``opengse.sim.gse_scapy``; the model computes each frame's uplink from its bytes, the
seed and the healthy set. Every frame must leave on exactly that uplink, whole, in input
order per uplink; frames with no healthy uplink are dropped and counted.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether

from opengse.sim.cocotb_util import random_pause, recv_within, reset_dut, wait_until
from opengse.sim.ecmp_model import ecmp_uplink, flow_key
from opengse.sim.gse_scapy import tag
from opengse.sim.runner import test_params

ROCE_PORT = 4791


def host_mac(n):
    return f"02:00:00:00:00:{n:02x}"


def roce_frame(src, dst, sport, payload=64, proto="udp"):
    """A host's frame (fabric-spec section 4), tagged as the leaf's tagger does."""
    l4 = {"udp": UDP(sport=sport, dport=ROCE_PORT), "tcp": TCP(sport=sport, dport=80), "icmp": ICMP()}[proto]
    eth = Ether(src=host_mac(src), dst=host_mac(dst)) / IP(src=f"10.0.0.{src}", dst=f"10.0.0.{dst}") / l4
    raw = bytes(eth / bytes(payload))
    return tag(raw, src_node=src, dst_node=dst, port=dst % 4, len=len(raw))


class SelectorBench:
    def __init__(self, dut, seed, idle=0.2, backpressure=0.3):
        self.dut = dut
        self.rng = random.Random(seed)
        self.uplinks = test_params()["uplinks"]
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sinks = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{u}"), dut.clk, dut.rst)
            for u in range(self.uplinks)
        ]
        if idle:
            self.src.set_pause_generator(random_pause(self.rng, idle))
        if backpressure:
            for sink in self.sinks:
                sink.set_pause_generator(random_pause(self.rng, backpressure))
        self.expect = [[] for _ in range(self.uplinks)]
        self.dropped = self.mac_hashed = 0
        self.sent = 0

    async def start(self, seed=0, healthy=None):
        self.set(seed, (1 << self.uplinks) - 1 if healthy is None else healthy)
        await reset_dut(self.dut)

    def set(self, seed, healthy):
        self.seed, self.healthy = seed, healthy
        self.dut.seed.value = seed
        self.dut.healthy.value = healthy

    def send(self, frame, user=0):
        """Queue ``frame`` and note where the model says it goes."""
        frame = bytes(frame)
        up = ecmp_uplink(frame, self.seed, self.healthy, self.uplinks)
        self.mac_hashed += int(not flow_key(frame)[1])
        if up is None:
            self.dropped += 1
        else:
            self.expect[up].append((frame, user))
        self.sent += 1
        self.src.send_nowait(AxiStreamFrame(frame, tuser=user))
        return up

    async def drain(self):
        """Every expected frame on its uplink, in order; nothing else."""
        for u, frames in enumerate(self.expect):
            for k, (frame, user) in enumerate(frames):
                rx = await recv_within(
                    self.sinks[u], f"frame {k} of {len(frames)} for uplink {u}", clocks=100_000
                )
                got = bytes(rx.tdata)
                assert got == frame, f"uplink {u} frame {k}: {got[:60].hex()} != {frame[:60].hex()}"
                got_user = rx.tuser if isinstance(rx.tuser, int) else rx.tuser[-1]
                assert got_user == user, f"uplink {u} frame {k}: tuser {got_user} != {user}"
            frames.clear()
        await wait_until(self.dut.clk, self.src.empty, "the source to finish", 100_000)
        for _ in range(40):
            await RisingEdge(self.dut.clk)
        for u, sink in enumerate(self.sinks):
            assert sink.empty(), f"uplink {u} has frames the model did not send there"

    def check_counters(self, per_uplink):
        d = self.dut
        got = [int(getattr(d, f"stat_frames_{u}").value) for u in range(self.uplinks)]
        assert got == per_uplink, f"stat_frames {got} != {per_uplink}"
        assert int(d.stat_drop_no_uplink.value) == self.dropped, (
            f"stat_drop_no_uplink {int(d.stat_drop_no_uplink.value)} != {self.dropped}"
        )
        assert int(d.stat_mac_hashed.value) == self.mac_hashed, (
            f"stat_mac_hashed {int(d.stat_mac_hashed.value)} != {self.mac_hashed}"
        )


def odd_frames(rng):
    """Frames that are not plain IPv4/UDP in GSE: each keyed as the model says."""
    a, b = rng.randrange(16), rng.randrange(16)
    base = Ether(src=host_mac(a), dst=host_mac(b))
    frag = (
        base
        / IP(src=f"10.0.0.{a}", dst=f"10.0.0.{b}", flags="MF")
        / UDP(sport=rng.randrange(65536))
        / bytes(40)
    )
    frag2 = base / IP(src=f"10.0.0.{a}", dst=f"10.0.0.{b}", frag=10) / bytes(60)
    opts = base / IP(src=f"10.0.0.{a}", dst=f"10.0.0.{b}", options=b"\x01\x01\x01\x00") / UDP() / bytes(40)
    arp = base / ARP(psrc=f"10.0.0.{a}", pdst=f"10.0.0.{b}")
    return [
        tag(bytes(frag)),
        tag(bytes(frag2)),
        tag(bytes(opts)),
        tag(bytes(arp)),
        bytes(base / IP(src=f"10.0.0.{a}", dst=f"10.0.0.{b}") / UDP() / bytes(30)),  # untagged
        tag(bytes(base / IP(src=f"10.0.0.{a}", dst=f"10.0.0.{b}") / UDP()))[:50],  # ends before byte 55
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20))),  # runt
        roce_frame(a, b, rng.randrange(65536), proto=rng.choice(["tcp", "icmp"])),
    ]


@cocotb.test()
async def test_random_flows(dut):
    """Many flows (random hosts and UDP source ports) and odd frames, under several seeds
    and healthy sets (one with none: dropped and counted), with idle cycles and
    back-pressure: every frame on the model's uplink, whole, in order; counters."""
    tb = SelectorBench(dut, 7)
    U = tb.uplinks
    await tb.start()
    per = [0] * U
    full = (1 << U) - 1
    # with U = 1 the last set folds to none: uplink 0 down drops every frame
    phases = [(0, full), (0xDEADBEEF, full), (0x1234567, 0b1011 % (1 << U) or 1), (5, 0), (77, 0b0100 & full)]
    for seed, healthy in phases:
        tb.set(seed, healthy)
        flows = [
            (tb.rng.randrange(16), tb.rng.randrange(16), tb.rng.randrange(49152, 65536)) for _ in range(24)
        ]
        for _ in range(60):
            src, dst, sport = tb.rng.choice(flows)
            up = tb.send(
                roce_frame(src, dst, sport, payload=tb.rng.randrange(18, 400)),
                user=int(tb.rng.random() < 0.1),
            )
            if up is not None:
                per[up] += 1
        for frame in odd_frames(tb.rng):
            up = tb.send(frame)
            if up is not None:
                per[up] += 1
        await tb.drain()  # seed and healthy change only while the selector is empty
    tb.check_counters(per)
    used = sum(1 for n in per if n)
    assert used == U, f"only {used} of {U} uplinks carried frames"
    assert tb.dropped >= 60, f"the no-uplink phase dropped only {tb.dropped}"


@cocotb.test()
async def test_one_flow_one_uplink(dut):
    """Frames of one flow (same 5-tuple, any payload, any length) all take one uplink."""
    tb = SelectorBench(dut, 8)
    await tb.start(seed=0xC0FFEE)
    for flow in range(8):
        ups = {tb.send(roce_frame(1, 9, 50000 + flow, payload=tb.rng.randrange(18, 1400))) for _ in range(10)}
        assert len(ups) == 1, f"flow {flow} took uplinks {ups} in the model"
    await tb.drain()


async def placement(tb, flows, seed):
    """Send one frame per flow under ``seed``; the uplink each arrived on (checked
    against the model by the drain)."""
    tb.set(seed, (1 << tb.uplinks) - 1)
    ups = [tb.send(roce_frame(src, dst, sport)) for src, dst, sport in flows]
    await tb.drain()
    return ups


def partition(ups):
    """Which flows share an uplink, whatever the uplinks' names."""
    groups = {}
    for flow, up in enumerate(ups):
        groups.setdefault(up, set()).add(flow)
    return sorted(sorted(g) for g in groups.values())


@cocotb.test()
async def test_seeds_move_flows(dut):
    """The faithful-model point of docs/ecmp.md on the hardware. 16 host pairs of an
    inter-leaf permutation, one queue pair each:

    * fixed UDP source ports, seeds 1..4 (a CRC start value only): with a power-of-two
      number of uplinks the flows that share an uplink are the same for every seed (CRC
      is linear: a seed XORs every hash with one constant, which relabels the uplinks);
    * source ports drawn per flow from each seed (as the generator does): the sharing
      changes from seed to seed."""
    tb = SelectorBench(dut, 9, idle=0.0, backpressure=0.0)
    await tb.start()
    pairs = [(n, (n + 4) % 16) for n in range(16)]
    fixed = [(s, d, 49152) for s, d in pairs]
    parts = set()
    for seed in (1, 2, 3, 4):
        parts.add(str(partition(await placement(tb, fixed, seed))))
    if tb.uplinks & (tb.uplinks - 1) == 0:
        assert len(parts) == 1, f"a start value alone changed which flows share an uplink: {parts}"
    moved = set()
    for seed in (1, 2, 3, 4):
        rng = random.Random(seed)
        drawn = [(s, d, rng.randrange(49152, 65536)) for s, d in pairs]
        moved.add(str(partition(await placement(tb, drawn, seed))))
    if tb.uplinks > 1:
        assert len(moved) == 4, f"drawn source ports gave only {len(moved)} different placements of 4"
    else:  # one uplink: nothing to move, every flow on uplink 0 under every seed
        assert parts == moved == {str([list(range(len(pairs)))])}, f"placements {parts | moved}"


@cocotb.test()
async def test_full_rate(dut):
    """Back-to-back minimum frames (60 B, 78 B tagged: 10 beats) of random flows, no idle,
    no back-pressure: the input never waits once started, the outputs together move one
    beat per clock, and the first beat leaves 12 clocks after it arrived."""
    tb = SelectorBench(dut, 10, idle=0.0, backpressure=0.0)
    await tb.start(seed=3)
    beats_in, beats_out, stalls = [], [], 0
    d = dut
    U = tb.uplinks

    async def monitor():
        nonlocal stalls
        clock = 0
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            clock += 1
            if int(d.s_axis_tvalid.value):
                if int(d.s_axis_tready.value):
                    beats_in.append(clock)
                else:
                    stalls += 1
            for u in range(U):
                if int(getattr(d, f"m_axis_{u}_tvalid").value) and int(
                    getattr(d, f"m_axis_{u}_tready").value
                ):
                    beats_out.append(clock)

    cocotb.start_soon(monitor())
    await RisingEdge(d.clk)
    for _ in range(120):
        tb.send(roce_frame(tb.rng.randrange(16), tb.rng.randrange(16), tb.rng.randrange(65536), payload=18))
    await tb.drain()
    assert len(beats_in) == 1200 and len(beats_out) == 1200, f"{len(beats_in)} beats in, {len(beats_out)} out"
    assert stalls == 0, f"the input waited {stalls} clocks"
    span = beats_out[-1] - beats_out[0] + 1
    assert span == len(beats_out), f"{len(beats_out)} beats out over {span} clocks: bubbles"
    assert beats_out[0] - beats_in[0] == 12, f"first beat out {beats_out[0] - beats_in[0]} clocks after in"

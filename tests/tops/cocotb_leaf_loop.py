"""cocotb test of a GSE leaf (the catalog's gse_leaf, ``gse export leaf``'s export)
whose uplinks loop back to its own fabric ports: :class:`Loopback`, the bench's delay
lines, returns uplink u's ``m_axis_fab_u`` on ``s_axis_fab_u`` and ``fab_pause_u`` on
``fab_pause_in_u`` a fixed number of clocks later (the leaf's own ``delay``: the link
it was built for).

Host p sends scapy-built Ethernet II / IPv4 / UDP (RoCEv2 port) frames to host q of
the same leaf, so every frame takes the whole GSE path: store, destination lookup,
tagger, DGSQ manager, VOQ, REQUEST out and back, GRANT out and back, container
sprayed over the uplinks, reorder buffer, untag, egress FIFO. Several flows per
source, random sizes, random idle on the sources (which also obey ``host_pause``),
random back-pressure on the sinks. Frames to a MAC the table does not hold, frames
that already carry the GSE EtherType, runts (10 bytes) and frames longer than the
leaf's ``max_frame_bytes`` are sent too and must be dropped and counted.

The reference is the bench's own ledger (plain Python): every frame to a known host
arrives exactly once, byte-identical, at the right host port, in order per
(source port, flow); nothing else arrives; the counters agree (frames in and out,
unknown-MAC drops, no VOQ, reorder, store or egress drop). Every wait is bounded.
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from opengse.firmware.regs import AsyncRegisters, RegisterError
from opengse.rtl.catalog import get_block
from opengse.sim.axil_bus import AxilBus
from opengse.sim.cocotb_util import random_pause, reset_dut, wait_until
from opengse.sim.runner import test_params

H = test_params()["host_ports"]
U = test_params()["uplinks"]
SEED = int(os.environ.get("LEAF_LOOP_SEED", "0") or 0)
MAX_FRAME = test_params().get("max_frame_bytes", 9216)


def mac_of(n):
    return f"02:00:00:00:00:{n:02x}"


def mac_value(mac):
    """The table's ``mac``: the address with its first byte on the wire in bits 7:0."""
    return int.from_bytes(bytes(int(b, 16) for b in mac.split(":")), "little")


def frame(src, dst_mac, dst_ip, flow, seq, size, rng):
    head = Ether(dst=dst_mac, src=mac_of(src)) / IP(src=f"10.0.0.{src}", dst=dst_ip, proto=17)
    head = head / UDP(sport=49152 + 16 * src + flow, dport=4791)
    body = bytes([src, flow]) + seq.to_bytes(4, "big")
    pad = max(0, size - len(head) - len(body))
    body += bytes(rng.getrandbits(8) for _ in range(pad))
    return bytes(head / Raw(body))


def ident(data):
    """(source port, flow, seq) of a frame built by :func:`frame`."""
    p = data[42:48]
    return p[0], p[1], int.from_bytes(p[2:6], "big")


class RegConfig:
    """Configuration and counters over AXI4-Lite (cocotbext-axi AxiLiteMaster with
    random pauses on all five channels, the project's register driver)."""

    def __init__(self, dut, rng):
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for ch in (
            self.axil.write_if.aw_channel,
            self.axil.write_if.w_channel,
            self.axil.write_if.b_channel,
            self.axil.read_if.ar_channel,
            self.axil.read_if.r_channel,
        ):
            ch.set_pause_generator(random_pause(random.Random(rng.random()), 0.3))
        leaf = get_block("leaf").factory(**test_params())  # constructed for its register map only
        leaf._MustUse__silence = True
        self.regmap = leaf.regmap
        self.regs = AsyncRegisters(AxilBus(self.axil), self.regmap)

    async def setup(self, node_base, tcs, tenants, entries):
        r = self.regs
        await r.check()  # ident and map fingerprint
        await r.write("leaf.node_base", node_base)
        await r.write("leaf.ecmp_seed", 0x1234_5678)
        for p, (tc, tenant) in enumerate(zip(tcs, tenants)):
            await r.write("leaf.host_tc", tc, p)
            await r.write("leaf.host_tenant", tenant, p)
        for index, (mac, node, port) in enumerate(entries):
            await r.write("leaf.dest_index", index)
            await r.write("leaf.dest_mac", mac_value(mac))
            await r.write("leaf.dest_node", node)
            await r.write("leaf.dest_port", port)
            await r.write("leaf.dest_valid", 1)
            await r.write("leaf.dest_write", 1)
        for index, (mac, node, port) in enumerate(entries):  # read back
            await r.write("leaf.dest_index", index)
            got = [await r.read(f"leaf.dest_rd_{f}") for f in ("mac", "node", "port", "valid")]
            assert got == [mac_value(mac), node, port, 1], f"dest entry {index}: read back {got}"
        assert await r.read("leaf.node_base") == node_base
        assert await r.read("leaf.host_tenant", len(tenants) - 1) == tenants[-1]
        try:
            await r.write("leaf.healthy", 1)
        except RegisterError:
            pass
        else:
            raise AssertionError("a write to the RO leaf.healthy was accepted")

    async def stat(self, part, sub, name, index=None):
        return await self.regs.read(f"{part}.{sub}_{name}" if sub else f"{part}.{name}", index)


class Loopback:
    """The uplinks looped back to the leaf's own fabric ports: every clock, uplink u's
    transmit beat (``m_axis_fab_u``, ``tready`` held 1) and ``fab_pause_u`` enter a
    delay line of ``delay`` clocks that never back-pressures and come back on
    ``s_axis_fab_u`` (whose ``tready`` the leaf holds at 1) and ``fab_pause_in_u``.
    A beat the leaf sends at clock edge t is taken by it at edge t + ``delay``."""

    FIELDS = ("tdata", "tkeep", "tlast", "tuser")

    def __init__(self, dut, uplinks, delay):
        assert delay >= 1, delay
        self.dut, self.delay = dut, delay
        self.links = []
        for u in range(uplinks):
            tx = [getattr(dut, f"m_axis_fab_{u}_{f}") for f in self.FIELDS]
            rx = [getattr(dut, f"s_axis_fab_{u}_{f}") for f in self.FIELDS]
            ends = (getattr(dut, f"m_axis_fab_{u}_tvalid"), tx, getattr(dut, f"s_axis_fab_{u}_tvalid"), rx)
            self.links.append((*ends, getattr(dut, f"fab_pause_{u}"), getattr(dut, f"fab_pause_in_{u}")))
            getattr(dut, f"m_axis_fab_{u}_tready").value = 1
            ends[2].value = 0
            self.links[-1][5].value = 0

    async def run(self):
        # Entry k of a line: what the link delivers k + 1 edges from now; None: no beat.
        lines = [deque([(None, 0)] * (self.delay - 1)) for _ in self.links]
        shown = [(None, 0)] * len(self.links)  # what each receiving end shows now
        while True:
            await RisingEdge(self.dut.clk)
            for k, (tx_valid, tx, rx_valid, rx, pause, pause_in) in enumerate(self.links):
                beat = tuple(int(s.value) for s in tx) if int(tx_valid.value) else None
                lines[k].append((beat, int(pause.value)))
                out = lines[k].popleft()
                if out == shown[k]:
                    continue
                (beat, p), (was, was_p) = out, shown[k]
                if beat is not None:
                    for sig, v in zip(rx, beat):
                        sig.value = v
                if (beat is None) != (was is None):
                    rx_valid.value = beat is not None
                if p != was_p:
                    pause_in.value = p
                shown[k] = out


class LeafBench:
    def __init__(self, dut, seed):
        self.dut, self.p = dut, test_params()
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.srcs = [
            AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_host_{p}"), dut.clk, dut.rst)
            for p in range(H)
        ]
        self.sinks = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_host_{p}"), dut.clk, dut.rst)
            for p in range(H)
        ]
        self.cfg = RegConfig(dut, self.rng)
        cocotb.start_soon(Loopback(dut, U, self.p["delay"]).run())
        self.gse = self.p.get("lb", 0) == 0
        self.got = [[] for _ in range(H)]
        self.expect = [dict() for _ in range(H)]  # per sink: (src, flow) -> [frames in order]
        self.unknown = [0] * H
        self.spoofed = [0] * H  # frames with the GSE EtherType from a host
        self.runts = [0] * H  # frames shorter than 14 bytes
        self.longs = [0] * H  # frames longer than max_frame_bytes
        self.sent = 0

    async def start(self, sink_pause=0.2):
        d = self.dut
        d.link_up.value = (1 << U) - 1
        for p in range(H):
            getattr(d, f"host_pause_in_{p}").value = 0
        await reset_dut(d)
        await self.cfg.setup(
            0, [p % 8 for p in range(H)], list(range(H)), [(mac_of(q), q, q) for q in range(H)]
        )
        for q in range(H):
            self.sinks[q].set_pause_generator(random_pause(random.Random(self.rng.random()), sink_pause))
            cocotb.start_soon(self._collect(q))
        await wait_until(
            d.clk, lambda: int(d.healthy.value) == (1 << U) - 1, f"all {U} uplinks healthy", 20000
        )

    async def _collect(self, q):
        while True:
            rx = await self.sinks[q].recv()
            self.got[q].append(bytes(rx.tdata))

    async def _host(self, p, frames, idle):
        src, pause = self.srcs[p], getattr(self.dut, f"host_pause_{p}")
        rng = random.Random(self.rng.random())
        for data in frames:
            while int(pause.value):  # the leaf asked this host to stop: no new frame
                await RisingEdge(self.dut.clk)
            for _ in range(rng.randrange(idle + 1)):
                await RisingEdge(self.dut.clk)
            await src.send(AxiStreamFrame(data))
            await src.wait()

    def traffic(self, per_host, flows, sizes, unknown_every):
        plan = []
        for p in range(H):
            frames, seqs = [], {}
            dests = [self.rng.randrange(H) for _ in range(flows)]
            for k in range(per_host):
                if unknown_every and k % unknown_every == unknown_every - 1:
                    frames.append(
                        frame(p, "02:00:00:00:00:99", "10.0.0.99", 0, 0, self.rng.randrange(*sizes), self.rng)
                    )
                    self.unknown[p] += 1
                    continue
                if unknown_every and k % unknown_every == unknown_every // 2:
                    spoof = bytearray(
                        frame(p, mac_of(0), "10.0.0.0", 0, 0, self.rng.randrange(*sizes), self.rng)
                    )
                    spoof[12:14] = b"\x88\xb5"
                    frames += [bytes(spoof), bytes(self.rng.getrandbits(8) for _ in range(10))]
                    self.spoofed[p] += 1
                    self.runts[p] += 1
                    continue
                if unknown_every and k % unknown_every == 1:
                    # to a known host: only its length makes it bad
                    size = MAX_FRAME + 1 + self.rng.randrange(300)
                    frames.append(frame(p, mac_of(dests[0]), f"10.0.0.{dests[0]}", 0, 0, size, self.rng))
                    self.longs[p] += 1
                    continue
                f = self.rng.randrange(flows)
                q = dests[f]
                seq = seqs.get(f, 0)
                seqs[f] = seq + 1
                data = frame(p, mac_of(q), f"10.0.0.{q}", f, seq, self.rng.randrange(*sizes), self.rng)
                frames.append(data)
                self.expect[q].setdefault((p, f), []).append(data)
                self.sent += 1
            plan.append(frames)
        return plan

    async def run(self, plan, idle):
        tasks = [cocotb.start_soon(self._host(p, plan[p], idle)) for p in range(H)]
        for t in tasks:
            await t
        total = self.sent
        await wait_until(
            self.dut.clk, lambda: sum(map(len, self.got)) >= total, lambda_what(self), clocks=400000
        )
        for _ in range(3000):  # anything extra shows up now
            await RisingEdge(self.dut.clk)

    def check(self):
        for q in range(H):
            per_flow = {}
            for data in self.got[q]:
                src, flow, _seq = ident(data)
                per_flow.setdefault((src, flow), []).append(data)
            assert set(per_flow) <= set(self.expect[q]), (
                f"host {q} got frames of flows it was not sent: {set(per_flow) - set(self.expect[q])}"
            )
            for key, want in self.expect[q].items():
                got = per_flow.get(key, [])
                assert len(got) == len(want), (
                    f"host {q} flow {key}: {len(got)} frames arrived, {len(want)} sent"
                )
                for i, (g, w) in enumerate(zip(got, want)):
                    assert g == w, (
                        f"host {q} flow {key} frame {i}: arrived {ident(g)} ({len(g)} B), "
                        f"expected {ident(w)} ({len(w)} B)"
                    )


def lambda_what(bench):
    return f"{bench.sent} frames at the hosts (got {[len(g) for g in bench.got]})"


@cocotb.test()
async def leaf_loopback(dut):
    """Host to host through the whole path (GSE: REQUEST, GRANT, spray, reorder; ECMP:
    hashed uplink), random sizes, flows, idle, back-pressure; then the counters."""
    bench = LeafBench(dut, SEED or 1)
    await bench.start(sink_pause=0.2)
    plan = bench.traffic(per_host=60, flows=3, sizes=(60, 1501), unknown_every=15)
    await bench.run(plan, idle=6)
    bench.check()
    stat = bench.cfg.stat
    for p in range(H):
        sent = len(plan[p])
        stored = sent - bench.runts[p] - bench.longs[p]
        passed = stored - bench.unknown[p] - bench.spoofed[p]
        checks = {
            ("cls", "store_frames"): stored,
            ("cls", "store_drop_runt"): bench.runts[p],
            ("cls", "store_drop_long"): bench.longs[p],
            ("cls", "drop_unknown"): bench.unknown[p],
            ("cls", "drop_spoof"): bench.spoofed[p],
            ("cls", "frames"): passed,
            ("tag", "frames"): passed,
            ("cls", "store_drop_overflow"): 0,
            ("cls", "store_drop_bad"): 0,
        }
        for (sub, name), want in checks.items():
            got_n = await stat(f"h{p}_in", sub, name)
            assert got_n == want, f"host {p} {sub}_{name}: {got_n}, expected {want}"
        got = len(bench.got[p])
        assert await stat(f"h{p}_out", None, "frames_out") == got
        assert await stat(f"h{p}_out", None, "drop_bad") == 0
        if bench.gse:
            for c in ("full", "queue", "tenant", "dt", "bad"):
                assert await stat(f"h{p}_in", "voq", f"drop_{c}") == 0, f"host {p} VOQ drop {c}"
            assert await stat(f"h{p}_out", "ro", "lost") == 0
            for c in ("dup", "window", "orphan", "bad", "runt", "other"):
                assert await stat(f"h{p}_out", "ro", f"drop_{c}") == 0, f"host {p} reorder drop {c}"
            grants = await stat(f"h{p}_out", "arb", "grants")
            if bench.expect[p]:  # the plan's random destinations may leave a host unused
                assert grants > 0, f"host {p}: no grant"
            else:
                assert grants == 0, f"host {p}: {grants} grants, but no frame was sent to it"
    for u in range(U):
        assert await stat(f"u{u}_rx", None, "drop_unrouted") == 0, f"uplink {u} unrouted"
        assert await stat(f"u{u}_rx", "store", "drop_overflow") == 0
        assert await stat(f"u{u}_rx", None, "probes") > 0
        assert await stat(f"u{u}_tx", None, "drop_queue") == 0, f"uplink {u} queue drops"
    if bench.gse:
        used = [await stat(f"h{p}_in", "sp", "containers", u) for p in range(H) for u in range(U)]
        if U > 1:
            assert sum(1 for c in used if c) > H, f"containers per (host, uplink) {used}: not sprayed"
        else:  # one uplink (two leaves cabled together): every host's containers on it
            for p in range(H):
                if any(src == p for q in range(H) for src, _f in bench.expect[q]):
                    assert used[p] > 0, f"host {p}: no container on uplink 0"
        assert await stat("ctl", None, "requests") > 0 and await stat("ctl", None, "grants") > 0
    else:
        used = [await stat(f"h{p}_in", "sel", "frames", u) for p in range(H) for u in range(U)]
        assert sum(used) == bench.sent, f"selector frames {used} != {bench.sent}"
        if U > 1:
            assert sum(1 for c in used if c) > 1, f"frames per (host, uplink) {used}: all on one uplink"

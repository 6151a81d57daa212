"""Bench class for the PKTC path across an emulated fabric (gse_pktc_fabric_tb,
:mod:`opengse.sim.pktc_fabric_top`), used by tests/pktc/cocotb_pktc_fabric.py and by
``gse bench pktc``:
cocotb bench for the PKTC path across an emulated fabric (gse_pktc_fabric_tb):
the sprayer of source 0 (with its link monitor) sends containers over U uplinks;
the emulated links (sim/pktc_model.py FabricModel: per-link delay, per-container
jitter, random loss of whole containers, one link failing mid-stream and later
coming back) deliver them, merged, to the reorder buffer, together with the
containers of sources 1..N-1 (stamped by the plain-Python SprayerModel).

Checked: per source, containers come out whole, in seq order, without duplicates,
byte-exact; exactly the containers the fabric lost are missing and the reorder
buffer counted each of them once; the failed link leaves the healthy set within
the link monitor's bound and rejoins; the sprayer's byte balance."""

import heapq
import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Edge, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from .cocotb_util import reset_dut
from .pktc_model import FIRST, FabricModel, ReorderChecker, SprayerModel, frame_fields, tagged_frame
from .runner import test_params
from .valid_ready import FieldStreamSource

META_FIELDS = ("dst_node", "dgsq", "ttl", "len", "last")
RO_STATS = (
    "frames_in",
    "containers_out",
    "lost",
    "drop_dup",
    "drop_window",
    "drop_orphan",
    "drop_bad",
    "drop_runt",
    "drop_other",
)
DST = 9


def now():
    return int(get_sim_time("ns")) // 10


class FabricTB:
    def __init__(self, dut, seed, loss, fail_link, fail_time, heal_time):
        self.dut = dut
        self.p = test_params()
        self.U = self.p["uplinks"]
        self.N = self.p["sources"]
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.meta = FieldStreamSource(dut, "s_meta", dut.clk, META_FIELDS)
        self.ups = [
            AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_up_{i}"), dut.clk, dut.rst) for i in range(self.U)
        ]
        self.fab = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_fab"), dut.clk, dut.rst)
        self.out = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        for x in [self.source, self.fab, self.out] + self.ups:
            x.log.setLevel(logging.WARNING)
        self.fabric = FabricModel(
            self.U,
            self.rng,
            base_delay=(30, 60, 90, 120),
            jitter=80,
            loss=loss,
            fail_link=fail_link,
            fail_time=fail_time,
        )
        self.fail_link, self.fail_time, self.heal_time = fail_link, fail_time, heal_time
        self.down_link, self.down_time = 2, (heal_time or 0) + 4000
        self.heap = []
        self.tie = 0
        self.checker = ReorderChecker()
        self.sent = {s: [] for s in range(self.N)}  # per source: (seq, frames) sent
        self.up_frames = [[] for _ in range(self.U)]  # sprayer output per uplink: (frame, t)
        self.healthy_log = []  # (time, mask)
        self.model = SprayerModel(self.U)
        dut.link_up.value = (1 << self.U) - 1
        dut.link_fail.value = 0
        dut.s_ctrl_tvalid.value = 0
        for i in range(self.U):
            cocotb.start_soon(self._uplink(i))
        cocotb.start_soon(self._deliver())
        cocotb.start_soon(self._collect())
        cocotb.start_soon(self._watch_healthy())

    async def reset(self):
        await reset_dut(self.dut)

    # -- the emulated links ------------------------------------------------------------
    def _launch(self, link, t, fr):
        arrival = self.fabric.send(link, t, fr)
        f = frame_fields(fr)
        key = (f["src_node"], f["seq"])
        if f["flags"] & FIRST:
            self.sent[f["src_node"]].append((f["seq"], []))
        self.sent[f["src_node"]][-1][1].append(fr) if self.sent[f["src_node"]] and self.sent[f["src_node"]][
            -1
        ][0] == f["seq"] else None
        if arrival is not None:
            self.tie += 1
            heapq.heappush(self.heap, (arrival, self.tie, fr))
        return key

    async def _uplink(self, i):
        while True:
            fr = await self.ups[i].recv()
            fr = bytes(fr.tdata)
            self.up_frames[i].append((fr, now()))
            self._launch(i, now(), fr)

    async def _deliver(self):
        while True:
            await RisingEdge(self.dut.clk)
            t = now()
            while self.heap and self.heap[0][0] <= t:
                _a, _k, fr = heapq.heappop(self.heap)
                self.fab.send_nowait(AxiStreamFrame(fr))

    async def _collect(self):
        while True:
            fr = await self.out.recv()
            self.checker.frame(fr.tdata)

    async def _watch_healthy(self):
        while True:
            await Edge(self.dut.healthy)
            self.healthy_log.append((now(), int(self.dut.healthy.value)))

    # -- traffic ---------------------------------------------------------------------------
    def container_lens(self):
        return [self.rng.randint(200, 500) for _ in range(self.rng.randint(3, 4))]

    async def source0(self, ncont, gap):
        """Containers of source 0 into the sprayer, with idle gaps."""
        for n in range(ncont):
            lens = self.container_lens()
            for k, ln in enumerate(lens):
                fr = tagged_frame(ln, self.rng, src_node=0, dst_node=DST)
                self.source.send_nowait(AxiStreamFrame(fr))
                self.meta.send(
                    {"dst_node": DST, "dgsq": 77, "ttl": 9, "len": ln, "last": int(k == len(lens) - 1)}
                )
            while not self.source.empty():
                await RisingEdge(self.dut.clk)
            for _ in range(self.rng.randint(gap // 2, gap)):
                await RisingEdge(self.dut.clk)

    async def other_source(self, src, ncont, gap):
        """Source `src` >= 1: containers stamped by the Python model, sprayed round-robin
        over the uplinks the link monitor reports healthy (its own sprayer would)."""
        model = SprayerModel(self.U)
        for n in range(ncont):
            for _ in range(self.rng.randint(gap // 2, gap)):
                await RisingEdge(self.dut.clk)
            healthy = int(self.dut.healthy.value)
            link = model.rr_pick(healthy) if healthy else None
            while link is None:
                await RisingEdge(self.dut.clk)
                healthy = int(self.dut.healthy.value)
                link = model.rr_pick(healthy) if healthy else None
            lens = self.container_lens()
            fields = model.container(DST, 5, 9, lens)
            t = now()
            for k, ln in enumerate(lens):
                fr = tagged_frame(ln, self.rng, src_node=src, dst_node=DST, **fields[k])
                t += (len(fr) + 7) // 8
                self._launch(link, t, fr)

    async def link_events(self):
        while now() < self.fail_time:
            await RisingEdge(self.dut.clk)
        self.dut.link_fail.value = 1 << self.fail_link
        while now() < self.heal_time:
            await RisingEdge(self.dut.clk)
        self.dut.link_fail.value = 0
        self.fabric.fail_time = None  # the link carries traffic again
        # then the MAC of another link reports link down for a while
        while now() < self.down_time:
            await RisingEdge(self.dut.clk)
        self.dut.link_up.value = ((1 << self.U) - 1) & ~(1 << self.down_link)
        while now() < self.down_time + 2000:
            await RisingEdge(self.dut.clk)
        self.dut.link_up.value = (1 << self.U) - 1

    async def stats(self):
        await RisingEdge(self.dut.clk)
        d = self.dut
        return {n: int(getattr(d, f"ro_stat_{n}").value) for n in RO_STATS}

    async def wait_settled(self, limit):
        quiet = 0
        for _ in range(limit):
            await RisingEdge(self.dut.clk)
            busy = (
                self.heap
                or not self.fab.empty()
                or self.fab.active
                or not self.source.empty()
                or self.source.active
                or self.meta.queue
            )
            quiet = 0 if busy else quiet + 1
            if quiet > 3 * self.p["timeout"]:
                return
        raise AssertionError("fabric did not settle")

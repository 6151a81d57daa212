"""PKTC reorder buffer of the destination leaf: containers back in order, per source.

The sprayer of a source leaf sends each container whole on one uplink, and the
uplinks have different delays, so containers of one source arrive out of order
(frames of different containers may interleave; the frames *of* one container
arrive in order). This block stores them per source node in a window of W
containers and releases them strictly in ``seq`` order, whole.

Interface
---------
* ``s_axis`` (in, AXI-Stream, ``data_width``): GSE-tagged DATA frames from the
  fabric ports (after the parser). Always ready: the block never back-pressures
  the fabric; what it cannot keep it drops and counts. ``tkeep`` must be
  contiguous from byte 0 (the usual packet convention); ``tuser`` bit 0 on the
  last beat marks a bad frame.
* ``m_axis`` (out, AXI-Stream): the stored frames, container by container, each
  source's containers in ``seq`` order. Back-pressure (``tready``) is honoured.
* ``stat_*`` (out, 32-bit, wrapping): ``frames_in``, ``containers_out``, ``lost``
  (containers skipped: missing or partial after the timeout, or skipped over at a
  window jump), ``drop_dup`` (frames of a container already stored whole, delivered
  or skipped; copies of a FIRST frame), ``drop_window`` (frames of a container W or
  more ahead), ``drop_orphan`` (frames of a container whose FIRST frame was not
  stored), ``drop_bad`` (containers discarded whole: a frame with ``tuser`` set, or
  larger than a slot), ``drop_runt`` (frames of fewer than 32 valid bytes, the
  tagged header, counted by ``tkeep``: also one whose last beats are empty),
  ``drop_other`` (not the GSE EtherType ``ethertype``, not a v1 DATA frame, or
  ``src_node`` >= ``sources``), ``lost_overrun`` (of ``lost``, the heads skipped at
  once on the ``skip_distance`` evidence, not after the timeout).

Parameters
----------
``data_width`` (64), ``sources`` N (source nodes 0..N-1), ``window`` W (power of
two), ``slot_bytes`` (power of two: the storage of one container), ``timeout``
(clocks a missing head container is waited for once a later container of the same
source, or part of the head, is stored), ``ethertype`` (the GSE EtherType, 0x88B5),
``skip_distance`` D (0: off; 1..W-1: a FIRST frame stored D or more ahead of a head
that is missing or partial skips that head at once, counted in ``lost`` and
``lost_overrun``; sound only when no source has more than D containers in flight to
this buffer that have not been delivered, as the leaf's grant arbiter ensures with
D = ``max_inflight``; docs/pktc.md).

Structure (one part per file)
-----------------------------
``header.FrameHeader`` (header fields at byte 31) -> ``ingress.IngressDecision``
(window test, slot claim, drop reasons) -> ``writer.SlotWriter`` (beats into the slot
RAM, fill levels, done/bad) ; ``scheduler.HeadScheduler`` (next seq due per source,
round-robin pick of complete heads, timeout skip, window jump) ->
``reader.SlotReader`` (reads containers out, releases them) ; ``ram.SlotRAM`` (kept as
module ``gse_reorder_ram``) ; ``counters.ReorderCounters``.

Timing
------
* Ingress: 1 beat per clock, always ready. A frame's decision leaves the ingress
  three clocks after the beat holding header byte 31; its beats wait in a FIFO until
  then and reach the RAM's write register about ``hdr_beat`` + 8 clocks after they
  entered. A copy of a LAST frame is a duplicate however soon it follows: the
  container is closed at the LAST frame's decision.
* Egress: 1 beat per clock inside and across containers (the next container is
  picked while one is read). A container is picked at the earliest a clock after
  its last word reached the RAM's write register, and its first word can leave
  about 6 clocks after that register. Read latency: 2 clocks (block RAM, bank register) into an
  8-entry output FIFO.
* A missing container is skipped ``timeout`` + 2 .. ``timeout`` + N + 4 clocks after
  the first later container (or part of it) of the same source was stored; with
  ``skip_distance`` D, 5 .. N + 6 clocks after the header byte 31 of a FIRST frame D or
  more ahead (and once no frame of the source is being decided).
"""

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...catalog import BlockSpec
from ...header.gse_header import GSE_ETHERTYPE
from ...lib.stream import AXIStreamSignature
from .counters import STATS, ReorderCounters
from .geometry import ReorderGeometry
from .header import FrameHeader
from .ingress import IngressDecision
from .ram import SlotRAM
from .reader import SlotReader
from .scheduler import HeadScheduler
from .writer import SlotWriter

__all__ = ["ReorderBuffer", "EXPORTS", "STATS", "SlotRAM", "ReorderGeometry"]


class ReorderBuffer(wiring.Component):
    def __init__(
        self,
        data_width=64,
        sources=4,
        window=8,
        slot_bytes=8192,
        timeout=4096,
        ethertype=GSE_ETHERTYPE,
        skip_distance=0,
    ):
        self.geo = ReorderGeometry(data_width, sources, window, slot_bytes, timeout, ethertype, skip_distance)
        self.skip_distance = skip_distance
        self.data_width, self.sources, self.window = data_width, sources, window
        self.timeout, self.ethertype = timeout, ethertype
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                **{f"stat_{n}": Out(32) for n in STATS},
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.geo
        m.submodules.ram = ram = SlotRAM(g.word_bits, g.depth)
        m.submodules.header = hdr = FrameHeader(g)
        m.submodules.ingress = ing = IngressDecision(g)
        m.submodules.writer = wr = SlotWriter(g)
        m.submodules.scheduler = sch = HeadScheduler(g)
        m.submodules.reader = rd = SlotReader(g)
        m.submodules.counters = cnt = ReorderCounters()

        s = self.s_axis
        m.d.comb += s.ready.eq(1)
        for beat in (hdr.s_beat, wr.s_beat):
            m.d.comb += [beat.valid.eq(s.valid), beat.payload.eq(s.payload)]

        wiring.connect(m, hdr.m_req, ing.s_req)
        wiring.connect(m, ing.m_dec, wr.s_dec)
        wiring.connect(m, ing.m_ahead, sch.s_ahead)
        wiring.connect(m, ing.m_proof, sch.s_proof)
        wiring.connect(m, sch.m_job, rd.s_job)
        for sink in (ing.s_rel, wr.s_rel, sch.s_rel):
            m.d.comb += [sink.valid.eq(rd.m_rel.valid), sink.payload.eq(rd.m_rel.payload)]
        for sink in (ing.s_mnt, wr.s_mnt):
            m.d.comb += [sink.valid.eq(sch.m_mnt.valid), sink.payload.eq(sch.m_mnt.payload)]
        m.d.comb += [ing.exp[i].eq(sch.exp[i]) for i in range(g.sources)]
        m.d.comb += [
            wr.used.eq(ing.used),
            wr.gen.eq(ing.gen),
            sch.used.eq(ing.used),
            sch.done.eq(wr.done),
            sch.closed.eq(ing.closed),
            sch.busy.eq(ing.busy),
            sch.job_room.eq(rd.job_room),
            rd.bad.eq(wr.bad),
            *[rd.fill[i].eq(wr.fill[i]) for i in range(g.nslots)],
            ram.w_en.eq(wr.w_en),
            ram.w_addr.eq(wr.w_addr),
            ram.w_data.eq(wr.w_data),
            ram.r_en.eq(rd.r_en),
            ram.r_addr.eq(rd.r_addr),
            rd.r_data.eq(ram.r_data),
        ]
        wiring.connect(m, rd.m_axis, wiring.flipped(self.m_axis))

        rel, mnt = rd.m_rel, sch.m_mnt
        m.d.comb += [
            cnt.inc_frames_in.eq(hdr.frame_end),
            cnt.inc_containers_out.eq(rel.valid & ~rel.payload.bad),
            cnt.inc_drop_bad.eq(rel.valid & rel.payload.bad),
            cnt.add_lost.eq(Mux(mnt.valid, mnt.payload.lost, 0)),
            cnt.inc_lost_overrun.eq(mnt.valid & mnt.payload.overrun),
            *[
                getattr(cnt, f"inc_{n}").eq(getattr(ing, n))
                for n in ("drop_dup", "drop_window", "drop_orphan", "drop_runt", "drop_other")
            ],
            *[getattr(self, f"stat_{n}").eq(getattr(cnt, f"stat_{n}")) for n in STATS],
        ]
        return m


def _keep_modules(**_params):
    return {"ram": "gse_reorder_ram"}


EXPORTS = [
    BlockSpec(
        name="reorder",
        module="gse_reorder_buffer",
        factory=ReorderBuffer,
        params={
            "data_width": 64,
            "sources": 4,
            "window": 8,
            "slot_bytes": 8192,
            "timeout": 4096,
            "ethertype": GSE_ETHERTYPE,
            "skip_distance": 0,
        },
        description="PKTC reorder buffer: containers per source node released in seq order, "
        "whole; missing ones skipped after a timeout and counted",
        keep_modules=_keep_modules,
    )
]

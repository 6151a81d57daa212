"""HostEgress: one host port's destination side, fabric frames to the host, and the
port's grant arbiter."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...config import GSEConfig
from ...dgsq.arbiter import GrantArbiter
from ...dgsq.arbiter.records import arrival_layout
from ...dgsq.grant_framing import GrantFraming
from ...header.control_frames import ControlFrameEncoder
from ...header.gse_header import GSE_HEADER_BYTES, GSEFlags
from ...header.parser import GSEParser
from ...lib.packet_mux import ROUND_ROBIN, PacketMux
from ...lib.skid_buffer import SkidBuffer, skid_between
from ...lib.stream import AXIStreamSignature
from ...pktc.reorder import ReorderBuffer
from ..packet_buffer import PacketBuffer
from .host_ingress import FABRIC_MAC
from ...lib.pause_gate import PauseGate

__all__ = ["HostEgress"]


class HostEgress(wiring.Component):
    """GSE mode: per uplink an admission queue (store-and-forward, always ready, drops
    what does not fit) -> round-robin of the ``U`` queues (none with U = 1: the one
    queue's slice feeds the reorder buffer) -> reorder buffer (GSE mode;
    bypassed with ``reorder`` = 0, ECMP) -> untag (parser, ``strip`` 1) -> egress FIFO
    (store-and-forward) -> :class:`~opengse.rtl.lib.pause_gate.PauseGate` -> host; beside it the port's
    :class:`~opengse.rtl.dgsq.arbiter.GrantArbiter` (GSE mode), which grants against
    the FIFO's room, and the GRANTs' framing and encoder. Register slices
    (:class:`~opengse.rtl.lib.skid_buffer.SkidBuffer`, 1 clock each) sit between each
    admission queue and the round-robin, on the parser's two outputs, on the arrival
    reports to the arbiter, between the FIFO and the PauseGate (a frame reaches the host
    a clock later than without it) and on the GRANT frames (a clock later to the
    sprayer), so that no ready runs from one part into the next. The ``stat_*``
    counters count one clock after their event.

    Parameters: ``config`` (:class:`~opengse.rtl.config.GSEConfig`: ``egress_buffer_bytes``
    is the FIFO, ``nodes`` the reorder buffer's sources, ``reorder_window``),
    ``port`` (this host port's index on the leaf), ``reorder`` (1: GSE mode, 0: ECMP),
    ``slot_bytes``, ``reorder_timeout`` (reorder buffer), arbiter ``n_req``,
    ``lease_cycles``.

    Interface:

    * ``s_data[u]`` (in, AXI-Stream): this port's DATA from uplink u. With ``reorder`` = 1
      (GSE) always taken, into uplink u's own admission queue (a
      :class:`~opengse.rtl.tops.packet_buffer.PacketBuffer` of the egress FIFO's size with
      ``drop_full``): the U uplinks never wait for each other at the round-robin, so an
      uplink's receive path never blocks on this port. What the queues hold is granted
      and not yet arrived (outstanding), so together they never hold more than the
      egress FIFO; a frame that finds its queue full anyway (more than was granted) is
      dropped whole and counted (``stat_drop_admit``), a bad one (``tuser``) likewise
      (``stat_admit_drop_bad``). In ECMP mode (no queues) a full FIFO back-pressures
      into the uplink, whose store then pauses the spine.
    * ``m_axis`` (out): untagged frames to the host; ``pause_in`` (in): the host's
      pause (no new frame starts while it is 1).
    * ``node_id`` (in): this port's node (the GRANTs' ``src_node``).
    * ``s_req`` (in, :func:`~opengse.rtl.interfaces.request_record`): REQUESTs for this
      port's arbiter; ``m_grant_frames`` (out, AXI-Stream): its GRANT frames, for this
      port's sprayer (GSE mode; idle in ECMP mode).
    * ``fifo_level`` (out, beats), counters ``<part>_stat_*`` (``ro``, ``untag``,
      ``arb``, ``gf``), ``stat_frames_out``, ``stat_drop_bad`` / ``stat_drop_oversize``
      (the FIFO's), ``stat_arrivals``, ``stat_drop_admit`` / ``stat_admit_drop_bad``
      (the admission queues', GSE mode; 0 in ECMP mode).

    Arrivals: each frame that enters the FIFO (its last beat written) is reported to the
    arbiter: ``src_node``, ``dgsq``, ``credits`` = ceil((``len`` + 18) / 64) (the unit
    the source manager counted it in), ``last`` = its LAST flag. Until then its credit is
    outstanding; from then its beats are in the FIFO's level. So
    ``outstanding + level`` never exceeds what was granted against ``egress_room``
    (the FIFO's free space in credit units), and the overrun of a container (its
    last packet may pass the grant) waits in the reorder buffer while the FIFO is full.
    The report reaches the arbiter through a slice (a clock later) and ``egress_room``
    is registered (a clock old): both err on the safe side, a frame's beats enter the
    level clocks before its arrival leaves ``outstanding`` (see docs/leaf.md).
    """

    def __init__(
        self,
        config=GSEConfig(),
        port=0,
        reorder=1,
        slot_bytes=8192,
        reorder_timeout=4096,
        n_req=64,
        lease_cycles=8192,
    ):
        cfg = self.config = config
        w, U = cfg.data_width, cfg.uplinks
        self.port, self.reorder = port, reorder
        # one uplink (U = 1): nothing to take turns with, its frames go straight on
        self.mux = PacketMux(U, w, policy=ROUND_ROBIN) if U > 1 else None
        self.depth = cfg.egress_buffer_bytes // (w // 8)
        if self.depth & (self.depth - 1):
            raise ValueError("egress_buffer_bytes / bytes per beat must be a power of two")
        self.fifo = PacketBuffer(self.depth, w)
        self.untag = GSEParser(w, strip=1, ethertype=cfg.ethertype)
        self.gate = PauseGate(w)
        self._parts = {"untag": self.untag}
        if reorder:
            self.ro = ReorderBuffer(
                data_width=w,
                sources=cfg.nodes,
                window=cfg.reorder_window,
                slot_bytes=slot_bytes,
                timeout=reorder_timeout,
                ethertype=cfg.ethertype,
                # the arbiter keeps <= max_inflight containers of a requester (one per
                # source here) undelivered: one stored that far ahead proves a loss
                skip_distance=cfg.max_inflight if cfg.max_inflight < cfg.reorder_window else 0,
            )
            ap = cfg.arbiter_params()
            self.arb = GrantArbiter(n_req=n_req, lease_cycles=lease_cycles, **ap)
            self.gf = GrantFraming(slot_bits=self.arb.slot_bits)
            self.enc = ControlFrameEncoder(w, cfg.ethertype)
            self._parts.update(ro=self.ro, arb=self.arb, gf=self.gf)
            self.adm = [PacketBuffer(self.depth, w, drop_full=True) for _ in range(U)]
        sig = AXIStreamSignature(w)
        members = {
            "s_data": In(sig).array(U),
            "m_axis": Out(sig),
            "pause_in": In(1),
            "node_id": In(16),
            "s_req": In(interfaces.request_record()),
            "m_grant_frames": Out(sig),
            "fifo_level": Out(range(self.depth + 1)),
            "stat_frames_out": Out(32),
            "stat_drop_bad": Out(32),
            "stat_drop_oversize": Out(32),
            "stat_arrivals": Out(32),
            "stat_pause_cycles": Out(32),
            "stat_drop_admit": Out(32),
            "stat_admit_drop_bad": Out(32),
        }
        from ...lib.stat_ports import stat_members

        for prefix, part in self._parts.items():
            members.update(stat_members(prefix, part))
        super().__init__(members)

    def elaborate(self, platform):
        from ...lib.stat_ports import forward_stats

        m = Module()
        U, bpb = self.config.uplinks, self.config.data_width // 8
        if self.mux is not None:
            m.submodules.mux = mux = self.mux
            mux_in, mux_out = mux.s_axis, mux.m_axis
        else:
            # U = 1: the uplink's stream in place of the mux's input and output
            mux_out = AXIStreamSignature(self.config.data_width).create(path=("mux_out",))
            mux_in = [wiring.flipped(mux_out)]
        m.submodules.fifo = fifo = self.fifo
        m.submodules.untag = untag = self.untag
        m.submodules.gate = gate = self.gate
        if self.reorder:
            for u, adm in enumerate(self.adm):
                m.submodules[f"adm_{u}"] = adm
                wiring.connect(m, wiring.flipped(self.s_data[u]), adm.s_axis)
                # a register slice: the round-robin's ready (from every queue's valid)
                # does not reach the queue's read address and block RAM
                skid_between(m, f"adm_skid_{u}", adm.m_axis, mux_in[u])
            # the sums registered (one clock late): no adder chain into the register bank
            m.d.sync += [
                self.stat_drop_admit.eq(sum(a.stat_drop_full + a.stat_drop_oversize for a in self.adm)),
                self.stat_admit_drop_bad.eq(sum(a.stat_drop_bad for a in self.adm)),
            ]
        else:
            for u in range(U):
                wiring.connect(m, wiring.flipped(self.s_data[u]), mux_in[u])
        if self.reorder:
            m.submodules.ro = ro = self.ro
            wiring.connect(m, mux_out, ro.s_axis)
            wiring.connect(m, ro.m_axis, untag.s_axis)
        else:
            wiring.connect(m, mux_out, untag.s_axis)

        # untag -> FIFO, the arrival of each frame reported at its last beat; the parser's
        # two outputs through register slices, so that the FIFO's and the arbiter's
        # ready do not run into the parser's window
        m.submodules.untag_data_skid = data_skid = SkidBuffer(untag.m_axis.payload.shape())
        m.submodules.untag_hdr_skid = hdr_skid = SkidBuffer(untag.m_hdr.payload.shape())
        wiring.connect(m, untag.m_axis, data_skid.s)
        wiring.connect(m, untag.m_hdr, hdr_skid.s)
        src, hdr = data_skid.m, hdr_skid.m
        last = src.valid & src.payload.last
        # each arrival goes through a register slice to the arbiter, so that what lets
        # a frame's last beat into the FIFO (the slice's ready) is a register, not the
        # arbiter's accumulator logic
        arr = stream.Signature(arrival_layout()).create(path=("arr",))
        if self.reorder:
            skid_between(m, "arr_skid", arr, self.arb.s_arr)
        arr_ready = arr.ready if self.reorder else Const(1)
        # a frame's last beat waits for its header and for room for its arrival
        last_ok = ~src.payload.last | (arr_ready & hdr.valid)
        arr_go = Signal()
        m.d.comb += [
            fifo.s_axis.payload.eq(src.payload),
            fifo.s_axis.valid.eq(src.valid & last_ok),
            src.ready.eq(fifo.s_axis.ready & last_ok),
            hdr.ready.eq(last & fifo.s_axis.ready & arr_ready),
            arr_go.eq(hdr.valid & hdr.ready),
        ]
        # the counter counts the registered strobe (one clock late)
        arr_s = Signal()
        m.d.sync += arr_s.eq(arr_go)
        with m.If(arr_s):
            m.d.sync += self.stat_arrivals.eq(self.stat_arrivals + 1)
        if self.reorder:
            m.submodules.arb = arb = self.arb
            m.submodules.gf = gf = self.gf
            m.submodules.enc = enc = self.enc
            a = arr
            m.d.comb += [
                a.valid.eq(last & hdr.valid & fifo.s_axis.ready),
                a.payload.src_node.eq(hdr.payload.src_node),
                a.payload.dgsq.eq(hdr.payload.dgsq),
                a.payload.credits.eq((hdr.payload.len + GSE_HEADER_BYTES + 63)[6:]),
                a.payload.last.eq((hdr.payload.flags & GSEFlags.LAST.value) != 0),
            ]
            wiring.connect(m, wiring.flipped(self.s_req), arb.s_req)
            m.d.comb += arb.s_cfg.valid.eq(0)
            free_bytes = Signal(range(self.depth * bpb + 1))
            m.d.comb += free_bytes.eq((self.depth - fifo.level) * bpb)
            room = free_bytes >> 6
            # registered: the room the arbiter sees is a clock old. Safe: a frame's
            # arrival reaches the arbiter's outstanding later than its beats the room
            m.d.sync += arb.egress_room.eq(Mux(room > 0xFFFF, 0xFFFF, room))
            # a register slice: the encoder's ready does not reach the GRANT FIFO
            skid_between(m, "arb_grant_skid", arb.m_grant, gf.s_grant)
            m.d.comb += [gf.node_id.eq(self.node_id), gf.port.eq(self.port)]
            wiring.connect(m, gf.m_ctl, enc.s_ctl)
            m.d.comb += [
                enc.mac_da.eq(FABRIC_MAC | 0xFF),
                enc.mac_sa.eq(Cat(self.node_id[:8], Const(0x02, 8), Const(FABRIC_MAC >> 16, 32))),
            ]
            # a register slice: the sprayer's ready does not reach the arbiter's
            # GRANT FIFO and its pick
            skid_between(m, "grant_skid", enc.m_axis, wiring.flipped(self.m_grant_frames))
        else:
            m.d.comb += [self.s_req.ready.eq(1), self.m_grant_frames.valid.eq(0)]

        # a register slice after the FIFO: the host MAC's ready does not reach the
        # FIFO's read address (one clock of latency)
        skid_between(m, "out_skid", fifo.m_axis, gate.s_axis)
        wiring.connect(m, gate.m_axis, wiring.flipped(self.m_axis))
        o = self.m_axis
        out_s = Signal()
        m.d.sync += out_s.eq(o.valid & o.ready & o.payload.last)
        with m.If(out_s):
            m.d.sync += self.stat_frames_out.eq(self.stat_frames_out + 1)
        m.d.comb += [
            gate.pause.eq(self.pause_in),
            self.fifo_level.eq(fifo.level),
            self.stat_drop_bad.eq(fifo.stat_drop_bad),
            self.stat_drop_oversize.eq(fifo.stat_drop_oversize),
            self.stat_pause_cycles.eq(gate.stat_pause_cycles),
        ]
        for prefix, part in self._parts.items():
            forward_stats(m, self, prefix, part)
        return m

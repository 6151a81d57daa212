"""Test-only top: a closed DGSQ loop, source-side manager to destination-side arbiter.

One source leaf's :class:`~opengse.rtl.dgsq.manager.DGSQManager` and one destination
egress port's :class:`~opengse.rtl.dgsq.arbiter.GrantArbiter`, talking through real
control frames (tests/cocotb_dgsq_loop.py plays the VOQ buffer and the egress):

* REQUEST path: manager ``m_req`` → :class:`ControlFrameEncoder` → AXI-Stream link →
  :class:`ControlFrameDecoder` → :class:`~opengse.rtl.dgsq.control_demux.ControlDemux`
  → arbiter ``s_req`` (``backlog`` = REQUEST ``len``, ``seq`` = the acknowledged GRANT
  seq; a decoded frame that is not a REQUEST is dropped and counted in
  ``top_stat_not_request``).
* GRANT path: arbiter ``m_grant`` →
  :class:`~opengse.rtl.dgsq.grant_framing.GrantFraming` (``type`` GRANT, ``src_node`` =
  ``dst_node`` parameter (this egress leaf), ``dst_node`` = the requester, ``port`` =
  ``port`` parameter, ``ttl`` 64, ``len`` = credit, ``seq``, ``dgsq``, ``tc``,
  ``tenant`` echoed) → encoder → link → decoder → ``ControlDemux`` → manager
  ``s_grant``. Every join is a ``wiring.connect`` of the records in
  :mod:`opengse.rtl.interfaces`.
* Each link optionally has one register stage (``link_reg`` = 1) and drops whole
  frames at random: a frame is dropped when a free-running 32-bit LFSR (per link)
  at its first beat has its low 16 bits below ``req_loss``/``grant_loss`` (inputs:
  drop probability × 65536; 0 = lossless). Dropped frames are counted in
  ``link_stat_req_dropped``/``link_stat_grant_dropped``.

Ports to the test: ``s_pkt``, ``m_pkt``, ``m_rel``, ``s_rel_done`` (the manager's),
``s_arr``, ``egress_room``, ``outstanding``, ``slots_used`` (the arbiter's),
``s_cfg`` (the arbiter's weight writes), ``ctx_used``, monitors ``mon_req_*`` (every
field of a decoded REQUEST frame taken by the arbiter, ``valid`` = the handshake),
``mon_grant_*`` (every field of a decoded GRANT frame taken by the manager) and
``mon_arb_grant_valid``/``_slot`` (a grant leaving the arbiter), and every counter:
``mgr_stat_*``, ``arb_stat_*``, ``req_enc_stat_*``, ``req_dec_stat_*``,
``grant_enc_stat_*``, ``grant_dec_stat_*``, ``link_stat_*``, ``top_stat_*``.

Not a product block: a test-only composition, built by the test runner from its
:data:`SPEC`.
"""
from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.header.control_frames import ControlFrameDecoder, ControlFrameEncoder, ControlHeaderLayout
from opengse.rtl.dgsq.manager import DGSQManager
from opengse.rtl.dgsq.arbiter import GrantArbiter
from opengse.rtl.dgsq.control_demux import ControlDemux
from opengse.rtl.dgsq.grant_framing import GrantFraming
from opengse.rtl.lib.stat_ports import forward_stats, stat_members
from opengse.rtl.lib.stream import AXIStreamSignature

__all__ = ["DGSQLoopTestbenchTop", "SPEC"]

MGR_PARAMS = ("n_ctx", "refresh_cycles", "idle_cycles", "container_bytes", "ttl", "tick_shift",
              "n_tenants")
ARB_PARAMS = ("n_req", "buffer_credits", "grant_credits", "max_inflight", "n_tenants",
              "lease_cycles")
MAC_SRC = 0x02_00_00_00_00_05    # locally administered: only the two ends of the link
MAC_DST = 0x02_00_00_00_00_09
LFSR_TAPS = 0x80200003           # x^32 + x^22 + x^2 + x + 1 (maximal length)




def _lossy_link(m, name, src, dst, loss, dropped, reg, seed):
    """AXI-Stream ``src`` → ``dst`` with whole-frame random drops and an optional register."""
    lfsr = Signal(32, init=seed, name=f"{name}_lfsr")
    m.d.sync += lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ LFSR_TAPS, lfsr >> 1))
    first = Signal(init=1, name=f"{name}_first")    # the next beat starts a frame
    drop_frame = Signal(name=f"{name}_drop_frame")
    drop = Signal(name=f"{name}_drop")
    m.d.comb += drop.eq(Mux(first, lfsr[:16] < loss, drop_frame))
    take = src.valid & src.ready
    with m.If(take):
        m.d.sync += [first.eq(src.payload.last), drop_frame.eq(drop)]
        with m.If(src.payload.last & drop):
            m.d.sync += dropped.eq(dropped + 1)
    if not reg:
        m.d.comb += [dst.valid.eq(src.valid & ~drop), dst.payload.eq(src.payload),
                     src.ready.eq(dst.ready | drop)]
        return
    r_valid = Signal(name=f"{name}_r_valid")
    # The encoder never flags a frame error: the register carries no ``user`` bit.
    r_data, r_keep, r_last = (Signal.like(src.payload[f], name=f"{name}_r_{f}")
                              for f in ("data", "keep", "last"))
    m.d.comb += [src.ready.eq(~r_valid | dst.ready), dst.valid.eq(r_valid),
                 dst.payload.data.eq(r_data), dst.payload.keep.eq(r_keep),
                 dst.payload.last.eq(r_last), dst.payload.user.eq(0)]
    with m.If(dst.ready):
        m.d.sync += r_valid.eq(0)
    with m.If(take & ~drop):
        m.d.sync += [r_valid.eq(1), r_data.eq(src.payload.data), r_keep.eq(src.payload.keep),
                     r_last.eq(src.payload.last)]


class DGSQLoopTestbenchTop(wiring.Component):
    """Manager + REQUEST/GRANT frame links + arbiter (see the module docstring).

    Parameters: the manager's (``n_ctx, refresh_cycles, idle_cycles, container_bytes,
    ttl, tick_shift``), the arbiter's (``n_req, buffer_credits, grant_credits,
    max_inflight, n_tenants, lease_cycles``), ``src_node`` (the manager's leaf),
    ``dst_node`` and ``port`` (the arbiter's leaf and egress port), ``link_reg``
    (0/1: a register stage on each link).

    Timing: a control frame is 8 beats at 64 bits; a REQUEST reaches the arbiter
    about 10 (+1 with ``link_reg``) clocks after it leaves the manager, a GRANT the
    manager likewise.
    """

    def __init__(self, n_ctx=16, refresh_cycles=1024, idle_cycles=2048, container_bytes=4096,
                 ttl=64, tick_shift=4, n_req=64, buffer_credits=1024, grant_credits=64,
                 max_inflight=2, n_tenants=16, lease_cycles=2048, src_node=5, dst_node=9,
                 port=3, link_reg=1):
        self.mgr = DGSQManager(n_ctx=n_ctx, refresh_cycles=refresh_cycles,
                               idle_cycles=idle_cycles, container_bytes=container_bytes,
                               ttl=ttl, tick_shift=tick_shift, n_tenants=n_tenants)
        self.arb = GrantArbiter(n_req=n_req, buffer_credits=buffer_credits,
                                grant_credits=grant_credits, max_inflight=max_inflight,
                                n_tenants=n_tenants, lease_cycles=lease_cycles)
        self.req_enc, self.req_dec = ControlFrameEncoder(64), ControlFrameDecoder(64)
        self.grant_enc, self.grant_dec = ControlFrameEncoder(64), ControlFrameDecoder(64)
        self.req_demux, self.grant_demux = ControlDemux(), ControlDemux()
        self.grant_framing = GrantFraming(slot_bits=self.arb.slot_bits, ttl=64)
        self.src_node, self.dst_node, self.port, self.link_reg = src_node, dst_node, port, link_reg
        msig, asig = self.mgr.signature.members, self.arb.signature.members
        members = {
            "s_pkt": msig["s_pkt"],
            "m_pkt": msig["m_pkt"],
            "m_rel": msig["m_rel"],
            "s_rel_done": msig["s_rel_done"],
            "ctx_used": msig["ctx_used"],
            "s_arr": asig["s_arr"],
            "s_cfg": asig["s_cfg"],
            "egress_room": asig["egress_room"],
            "outstanding": asig["outstanding"],
            "slots_used": asig["slots_used"],
            "req_loss": In(16),
            "grant_loss": In(16),
            "mon_req_valid": Out(1),
            "mon_grant_valid": Out(1),
            "mon_arb_grant_valid": Out(1),
            "mon_arb_grant_slot": Out(self.arb.slot_bits),
        }
        # Every field of the decoded frames (also keeps the flattened export free of
        # header bits that nothing reads).
        for f, field in ControlHeaderLayout:
            members[f"mon_req_{f}"] = Out(field.shape)
            members[f"mon_grant_{f}"] = Out(field.shape)
        self._stat_blocks = {"mgr": self.mgr, "arb": self.arb, "req_enc": self.req_enc,
                             "req_dec": self.req_dec, "grant_enc": self.grant_enc,
                             "grant_dec": self.grant_dec}
        for prefix, block in self._stat_blocks.items():
            members.update(stat_members(prefix, block))
        for n in ("link_stat_req_dropped", "link_stat_grant_dropped", "top_stat_not_request"):
            members[n] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mgr = mgr = self.mgr
        m.submodules.arb = arb = self.arb
        m.submodules.req_enc = req_enc = self.req_enc
        m.submodules.req_dec = req_dec = self.req_dec
        m.submodules.grant_enc = grant_enc = self.grant_enc
        m.submodules.grant_dec = grant_dec = self.grant_dec
        m.submodules.req_demux = req_demux = self.req_demux
        m.submodules.grant_framing = grant_framing = self.grant_framing
        m.submodules.grant_demux = grant_demux = self.grant_demux

        # The test's side: VOQ buffer (packets, releases) and egress (arrivals, room).
        for name in ("s_pkt", "s_rel_done"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(mgr, name))
        for name in ("m_pkt", "m_rel"):
            wiring.connect(m, getattr(mgr, name), wiring.flipped(getattr(self, name)))
        wiring.connect(m, wiring.flipped(self.s_arr), arb.s_arr)
        wiring.connect(m, wiring.flipped(self.s_cfg), arb.s_cfg)
        m.d.comb += [mgr.node_id.eq(self.src_node), self.ctx_used.eq(mgr.ctx_used),
                     arb.egress_room.eq(self.egress_room),
                     self.outstanding.eq(arb.outstanding), self.slots_used.eq(arb.slots_used)]

        # REQUEST path: manager → encoder → link → decoder → control demux → arbiter.
        wiring.connect(m, mgr.m_req, req_enc.s_ctl)
        m.d.comb += [req_enc.mac_da.eq(MAC_DST), req_enc.mac_sa.eq(MAC_SRC)]
        _lossy_link(m, "req_link", req_enc.m_axis, req_dec.s_axis, self.req_loss,
                    self.link_stat_req_dropped, self.link_reg, seed=0x1234_5678)
        ctl = req_dec.m_ctl
        wiring.connect(m, ctl, req_demux.s_ctl)
        wiring.connect(m, req_demux.m_req, arb.s_req)
        sreq = arb.s_req
        # A GRANT on the REQUEST link is not for this arbiter: dropped, counted with the
        # other types.
        m.d.comb += [req_demux.m_grant.ready.eq(1),
                     self.top_stat_not_request.eq(req_demux.stat_grants
                                                  + req_demux.stat_drop_type)]

        # GRANT path: arbiter → grant framing → encoder → link → decoder → control demux
        # → manager.
        g = arb.m_grant
        wiring.connect(m, g, grant_framing.s_grant)
        m.d.comb += [grant_framing.node_id.eq(self.dst_node), grant_framing.port.eq(self.port)]
        wiring.connect(m, grant_framing.m_ctl, grant_enc.s_ctl)
        m.d.comb += [grant_enc.mac_da.eq(MAC_SRC), grant_enc.mac_sa.eq(MAC_DST)]
        _lossy_link(m, "grant_link", grant_enc.m_axis, grant_dec.s_axis, self.grant_loss,
                    self.link_stat_grant_dropped, self.link_reg, seed=0x9ABC_DEF1)
        gd, sg = grant_dec.m_ctl, mgr.s_grant
        wiring.connect(m, gd, grant_demux.s_ctl)
        wiring.connect(m, grant_demux.m_grant, sg)
        m.d.comb += grant_demux.m_req.ready.eq(1)

        # Monitors (handshakes) and counters.
        m.d.comb += [self.mon_req_valid.eq(sreq.valid & sreq.ready),
                     self.mon_grant_valid.eq(sg.valid & sg.ready),
                     self.mon_arb_grant_valid.eq(g.valid & g.ready),
                     self.mon_arb_grant_slot.eq(g.payload.slot)]
        for f, _ in ControlHeaderLayout:
            m.d.comb += [getattr(self, f"mon_req_{f}").eq(ctl.payload[f]),
                         getattr(self, f"mon_grant_{f}").eq(gd.payload[f])]
        for prefix, block in self._stat_blocks.items():
            forward_stats(m, self, prefix, block)
        return m


SPEC = BlockSpec(
        name="dgsq_loop_tb", module="gse_dgsq_loop_tb", factory=DGSQLoopTestbenchTop,
        params={"n_ctx": 16, "refresh_cycles": 1024, "idle_cycles": 2048,
                "container_bytes": 4096, "ttl": 64, "tick_shift": 4,
                "n_req": 64, "buffer_credits": 1024, "grant_credits": 64, "max_inflight": 2,
                "n_tenants": 16, "lease_cycles": 2048,
                "src_node": 5, "dst_node": 9, "port": 3, "link_reg": 1},
        description="test-only: DGSQ manager + REQUEST/GRANT control-frame links (lossy) + "
                    "grant arbiter, for the RTL-to-RTL closed-loop test",
)

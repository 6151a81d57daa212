"""PKTC container sprayer of the source leaf: whole containers over healthy uplinks.

A container (whole GSE-tagged DATA packets released by one grant) arrives on
``s_axis`` with one ``s_meta`` descriptor per packet. The sprayer rewrites the GSE
header of each packet in place (FIRST/LAST flags, container ``seq``, ``len``,
``dgsq``, ``ttl``, ``dst_node``) and sends every packet of the container on one uplink, chosen
among the healthy ones when the container starts.

Interface
---------
* ``s_axis`` (in, AXI-Stream): tagged DATA packets (GSE header at frame bytes
  14..31). ``tuser`` is passed through.
* ``s_meta`` (in, valid/ready, one per packet of ``s_axis``, consumed with the
  packet's first beat): ``dst_node`` (16; only its low ``log2(nodes)`` bits
  index the seq table: destinations that differ only above them share a seq
  counter), ``dgsq`` (16), ``ttl`` (8), ``len`` (16, the original frame length),
  ``last`` (1: last packet of its container). ``dst_node``/``dgsq``/``ttl`` of the
  first packet of a container count for the whole container (all three are
  stamped into every packet of it).
* ``s_ctrl`` (in, AXI-Stream): REQUEST/GRANT frames, sent unchanged with strict
  priority over data at every packet boundary (also inside a container: a
  control frame is no part of it and may take another uplink). Never splits a packet.
* ``m_axis_0 .. m_axis_{U-1}`` (out, AXI-Stream): the uplinks.
* ``avoid`` (in, U bits): uplinks other sprayers of the leaf are sending a container
  on; a new container takes a healthy uplink outside it when there is one (else any
  healthy one). Tie to 0 for a sprayer alone. ``busy`` (out, U bits): the uplink of
  this sprayer's container in progress (one-hot; 0 between containers), for the
  others' ``avoid``.
* ``healthy`` (in, U bits): uplinks allowed for new containers/control frames
  (from :class:`~opengse.rtl.pktc.link_monitor.LinkMonitor`). A link leaving the set is
  not chosen for a container that starts 2 (round-robin) or 1 + log2(U)
  (least-loaded) or more clocks later; a container
  already started on it finishes there (containers never split).
* ``src_node`` is not an input: the tagger stamped it, and one sprayer serves one
  source node, so the seq table is indexed by ``dst_node`` alone.
* ``stat_containers_<i>``, ``stat_bytes_<i>`` (out, 32-bit per uplink),
  ``stat_ctrl`` (control frames sent), ``stat_stall_no_uplink`` (clocks a ready
  container/control frame waited because no uplink was healthy).

Parameters
----------
``data_width`` (64), ``uplinks`` U (1..16), ``nodes`` (seq table depth, power of
two), ``policy`` (0 round-robin over healthy uplinks; 1 least-loaded: fewest bytes
sent, among healthy uplinks; a link that rejoins starts at the current minimum).
With U = 1 (a leaf cabled straight to another leaf) either policy sends every
container on uplink 0 while it is healthy and holds every container and control
frame while it is not; the seq numbers are stamped as with several uplinks.

Timing
------
1 beat per clock, no bubble between packets or containers (registered output
stage, ``s_axis_tready`` = the chosen uplink's ready or an empty output register).
A container can start once its first ``s_meta`` has been valid for one clock
(seq table read); with ``s_meta`` presented ahead (it is consumed at each packet's
first beat, so the next descriptor is visible during the current packet) that
costs nothing. After reset the seq table is cleared (``nodes`` clocks) before the
first container starts. The uplink choice is a register computed every clock from
the healthy set and the round-robin pointer / byte loads, so it is up to 2 clocks
(round-robin) or 1 + log2(U) clocks (least-loaded: the argmin tree has a register
per level) stale; containers are longer than that.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import ETH_HEADER_BYTES, GSE_FIELDS, GSEFlags, pack_header
from ..interfaces import spray_descriptor_layout
from ..lib.round_robin import next_in_turn
from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["ContainerSprayer", "SprayMetaLayout", "EXPORTS"]

SprayMetaLayout = spray_descriptor_layout()  # the shared record (rtl/interfaces.py)

STAMPED = ("flags", "dst_node", "ttl", "seq", "len", "dgsq")
FLAGS_OFFSET = [f[1] for f in GSE_FIELDS if f[0] == "flags"][0]


def _stamp(data, beat, nbytes, fields):
    """``data`` (one beat of ``nbytes`` bytes, beat index ``beat`` of its frame) with the
    GSE header bytes of the STAMPED fields replaced by ``fields``: per byte lane, the
    input byte, or on the beat that carries a stamped header byte in that lane, the stamp."""
    wire = pack_header(fields)
    stamped_bytes = set()
    for name, off, n, _lsb, _w in GSE_FIELDS:
        if name in STAMPED:
            stamped_bytes.update(range(off, off + n))
    lanes = []
    for lane in range(nbytes):
        byte = data[8 * lane : 8 * lane + 8]
        for k in sorted(stamped_bytes):
            fbyte = ETH_HEADER_BYTES + k
            if fbyte % nbytes == lane:
                byte = Mux(beat == fbyte // nbytes, wire[k], byte)
        lanes.append(byte)
    return Cat(*lanes)


LOAD_BITS = 20  # least-loaded byte counters (relative: renormalised)
LOAD_NORM = 1 << 18


def _uplink_choice(m, policy, healthy, last_pick, load, choice, choice_ok):
    """Drive ``choice``/``choice_ok``, the uplink for the next container: round-robin
    after ``last_pick`` (registered, 2 clocks stale at most), or (``policy`` 1) the
    least-loaded healthy uplink from an argmin tree with a register per level (ties:
    lower index; log2(U) clocks old, far less than a container)."""
    U, ubits = len(healthy), len(choice)
    if policy == 0:
        nxt, nxt_ok = next_in_turn(m, healthy, last_pick)
        m.d.sync += [choice.eq(nxt), choice_ok.eq(nxt_ok)]
    else:
        # argmin tree over healthy uplinks (ties: lower index), one register per
        # level: the choice is log2(U) clocks old, far less than a container
        level = [(Const(i, ubits), load[i], healthy[i]) for i in range(U)]
        depth = 0
        while len(level) > 1:
            nl = []
            for j in range(0, len(level), 2):
                (ia, la, ha) = level[j]
                i_o, l_o, h_o = Signal(ubits), Signal(LOAD_BITS), Signal()
                if j + 1 == len(level):
                    m.d.sync += [i_o.eq(ia), l_o.eq(la), h_o.eq(ha)]
                else:
                    (ib, lb, hb) = level[j + 1]
                    take_b = hb & (~ha | (lb < la))
                    m.d.sync += [i_o.eq(Mux(take_b, ib, ia)), l_o.eq(Mux(take_b, lb, la)), h_o.eq(ha | hb)]
                nl.append((i_o, l_o, h_o))
            level = nl
            depth += 1
        m.d.comb += [choice.eq(level[0][0]), choice_ok.eq(level[0][2])]


class ContainerSprayer(wiring.Component):
    def __init__(self, data_width=64, uplinks=4, nodes=16, policy=0):
        check_data_width(data_width)
        if not 1 <= uplinks <= 16:
            raise ValueError("uplinks must be 1..16")
        if nodes < 2 or nodes & (nodes - 1) or nodes > 65536:
            raise ValueError("nodes must be a power of two, 2..65536")
        if policy not in (0, 1):
            raise ValueError("policy: 0 round-robin, 1 least-loaded")
        self.data_width, self.uplinks, self.nodes, self.policy = data_width, uplinks, nodes, policy
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "s_meta": In(stream.Signature(SprayMetaLayout)),
                "s_ctrl": In(AXIStreamSignature(data_width)),
                "m_axis": Out(AXIStreamSignature(data_width)).array(uplinks),
                "healthy": In(uplinks),
                "avoid": In(uplinks),
                "busy": Out(uplinks),
                "stat_containers": Out(32).array(uplinks),
                "stat_bytes": Out(32).array(uplinks),
                "stat_ctrl": Out(32),
                "stat_stall_no_uplink": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        U, B = self.uplinks, self.data_width // 8
        ubits = max(1, (U - 1).bit_length())

        # ---- uplink choice, registered every clock from the current state -------------
        healthy = Signal(U)
        m.d.sync += healthy.eq(self.healthy)
        healthy_prev = Signal(U)
        m.d.sync += healthy_prev.eq(healthy)
        choice = Signal(ubits)
        choice_ok = Signal()
        last_pick = Signal(ubits)
        load = [Signal(LOAD_BITS, name=f"load{i}") for i in range(U)]
        # Sprayers of one leaf share its uplinks: a new container prefers a healthy
        # uplink none of the others is sending a container on (``avoid``), since two
        # containers on one uplink each run at half rate while another idles.
        avoid = Signal(U)
        m.d.sync += avoid.eq(self.avoid)
        free = healthy & ~avoid
        pref = Signal(U)
        m.d.comb += pref.eq(Mux(free.any(), free, healthy))
        _uplink_choice(m, self.policy, pref, last_pick, load, choice, choice_ok)
        min_load = Signal(LOAD_BITS)
        m.d.comb += min_load.eq(Cat(*load).word_select(choice, LOAD_BITS))

        # ---- seq table ------------------------------------------------------------------
        st, clearing = self._seq_table(m)
        meta = self.s_meta
        meta_seen = Signal()  # the table output matches the head descriptor
        # ---- packet/container state ----------------------------------------------------------
        in_pkt = Signal()  # inside a packet (data or control)
        pkt_ctrl = Signal()  # the packet in progress is a control frame
        in_cont = Signal()  # inside a container (between its first and last packet)
        cont_up = Signal(ubits)  # the container's uplink
        m.d.comb += self.busy.eq(Mux(in_cont, 1 << cont_up, 0))
        pkt_up = Signal(ubits)  # the current packet's uplink
        beat = Signal(range((ETH_HEADER_BYTES + 18 + B - 1) // B + 1))  # beat index, saturating
        nhdr_beats = (ETH_HEADER_BYTES + 18 + B - 1) // B
        f_first, f_last = Signal(), Signal()
        f_seq, f_len, f_dgsq, f_ttl = Signal(16), Signal(16), Signal(16), Signal(8)
        c_seq, c_dgsq, c_ttl, c_dst = Signal(16), Signal(16), Signal(8), Signal(16)
        f_dst = Signal(16)

        # output register per uplink (one valid at a time), shared payload
        o_valid = Signal(U)
        o_data = Signal(self.data_width)
        o_keep = Signal(B)
        o_last = Signal()
        o_user = Signal()
        for i in range(U):
            mi = self.m_axis[i]
            m.d.comb += [
                mi.valid.eq(o_valid[i]),
                mi.payload.data.eq(o_data),
                mi.payload.keep.eq(o_keep),
                mi.payload.last.eq(o_last),
                mi.payload.user.eq(o_user),
            ]
        out_ready = Cat(self.m_axis[i].ready for i in range(U))
        # the output register can take a beat for uplink u
        free = Signal()
        m.d.comb += free.eq(~o_valid.any() | (o_valid & out_ready).any())
        with m.If((o_valid & out_ready).any()):
            m.d.sync += o_valid.eq(0)

        s, c = self.s_axis, self.s_ctrl
        start_ctrl = Signal()
        start_data = Signal()
        with m.If(~in_pkt & free):
            with m.If(c.valid & choice_ok):
                m.d.comb += start_ctrl.eq(1)
            with m.Elif(s.valid & meta.valid & (in_cont | (meta_seen & choice_ok & ~clearing))):
                m.d.comb += start_data.eq(1)
        with m.If(~in_pkt & ((c.valid | (s.valid & meta.valid & ~in_cont)) & ~choice_ok)):
            m.d.sync += self.stat_stall_no_uplink.eq(self.stat_stall_no_uplink + 1)
        # meta_seen: the head descriptor has been there for a clock, so the seq table
        # output belongs to it (consumption makes the next one the head).
        m.d.sync += meta_seen.eq(meta.valid & ~(meta.ready))

        cont_start = Signal()  # a container starts (on `choice`)
        take_data = Signal()  # a data beat moves to the output register
        take_ctrl = Signal()
        m.d.comb += [
            take_data.eq(free & s.valid & ((in_pkt & ~pkt_ctrl) | start_data)),
            take_ctrl.eq(free & c.valid & ((in_pkt & pkt_ctrl) | start_ctrl)),
            s.ready.eq(free & ((in_pkt & ~pkt_ctrl) | start_data)),
            c.ready.eq(free & ((in_pkt & pkt_ctrl) | start_ctrl)),
            meta.ready.eq(start_data),
        ]

        up_now = Signal(ubits)
        with m.If(start_ctrl):
            m.d.comb += up_now.eq(choice)
        with m.Elif(start_data):
            m.d.comb += up_now.eq(Mux(in_cont, cont_up, choice))
        with m.Else():
            m.d.comb += up_now.eq(pkt_up)

        # Header field values of the packet starting now (first beat) / in progress.
        new_first = ~in_cont
        cur_last = Mux(start_data, meta.payload.last, f_last)
        new_f = {
            "seq": Mux(new_first, st.r0_data, c_seq),
            "len": meta.payload.len,
            "dgsq": Mux(new_first, meta.payload.dgsq, c_dgsq),
            "dst_node": Mux(new_first, meta.payload.dst_node, c_dst),
            "ttl": Mux(new_first, meta.payload.ttl, c_ttl),
        }
        with m.If(start_data):
            m.d.sync += [
                f_first.eq(new_first),
                f_last.eq(meta.payload.last),
                f_seq.eq(new_f["seq"]),
                f_len.eq(new_f["len"]),
                f_dgsq.eq(new_f["dgsq"]),
                f_ttl.eq(new_f["ttl"]),
                f_dst.eq(new_f["dst_node"]),
            ]
            with m.If(new_first):
                m.d.sync += [
                    c_seq.eq(st.r0_data),
                    c_dgsq.eq(meta.payload.dgsq),
                    c_dst.eq(meta.payload.dst_node),
                    c_ttl.eq(meta.payload.ttl),
                    cont_up.eq(choice),
                    last_pick.eq(choice),
                    in_cont.eq(1),
                ]
                m.d.comb += [
                    st.w_en.eq(1),
                    st.w_addr.eq(meta.payload.dst_node[: len(st.w_addr)]),
                    st.w_data.eq(st.r0_data + 1),
                ]
                m.d.comb += cont_start.eq(1)

        # In-place rewrite of the stamped header fields (bytes from pack_header).
        bcur = beat
        cur_beat = Mux(start_data | start_ctrl, 0, bcur)
        in_flags = Signal(8)
        fb = ETH_HEADER_BYTES + FLAGS_OFFSET
        m.d.comb += in_flags.eq(s.payload.data[8 * (fb % B) : 8 * (fb % B) + 8])
        # the first beat of a packet starting now, and a beat of the packet in progress,
        # each stamped from registers; the start decision only picks one
        out_start = _stamp(
            s.payload.data,
            Const(0, len(beat)),
            B,
            {"flags": Cat(new_first, meta.payload.last, in_flags[2], Const(0, 5)), **new_f},
        )
        out_cont = _stamp(
            s.payload.data,
            bcur,
            B,
            {
                "flags": Cat(f_first, f_last, in_flags[2], Const(0, 5)),
                "dst_node": f_dst,
                "ttl": f_ttl,
                "seq": f_seq,
                "len": f_len,
                "dgsq": f_dgsq,
            },
        )
        out_data = Mux(start_data, out_start, out_cont)
        assert GSEFlags.FIRST.value == 1 and GSEFlags.LAST.value == 2 and GSEFlags.CE.value == 4

        with m.If(take_data | take_ctrl):
            m.d.sync += [
                o_valid.eq(1 << up_now),
                o_data.eq(Mux(take_ctrl, c.payload.data, out_data)),
                o_keep.eq(Mux(take_ctrl, c.payload.keep, s.payload.keep)),
                o_last.eq(Mux(take_ctrl, c.payload.last, s.payload.last)),
                o_user.eq(Mux(take_ctrl, c.payload.user[0], s.payload.user[0])),
                pkt_up.eq(up_now),
            ]
            last_beat = Mux(take_ctrl, c.payload.last, s.payload.last)
            with m.If(last_beat):
                m.d.sync += [in_pkt.eq(0), beat.eq(0)]
                with m.If(take_ctrl):
                    m.d.sync += self.stat_ctrl.eq(self.stat_ctrl + 1)
                with m.Elif(cur_last):
                    m.d.sync += in_cont.eq(0)
            with m.Else():
                m.d.sync += [in_pkt.eq(1), pkt_ctrl.eq(take_ctrl)]
                with m.If(cur_beat != nhdr_beats):
                    m.d.sync += beat.eq(cur_beat + 1)

        # Accounting (counters, least-loaded byte loads) one clock behind, from
        # registers: keeps the uplinks' tready off the adders' paths.
        acc = self._counters(
            m, (c, s), take_data | take_ctrl, take_data, take_ctrl, up_now, cont_start, choice
        )
        self._loads(m, acc, choice_ok, min_load, healthy, healthy_prev, load)
        return m

    def _seq_table(self, m):
        """The seq table and its clearing after reset: ``(sram, clearing)``."""
        # Next container seq per destination node: one block RAM, registered read.
        m.submodules.seq_table = st = SRAM(16, self.nodes)
        nbits = len(st.r0_addr)
        m.d.comb += st.r0_addr.eq(self.s_meta.payload.dst_node[:nbits])
        # After reset the table is cleared (one entry per clock) before the first
        # container starts, so that seq restarts at 0 together with the reorder buffers.
        clearing = Signal(init=1)
        clear_addr = Signal(nbits)
        with m.If(clearing):
            m.d.comb += [st.w_en.eq(1), st.w_addr.eq(clear_addr), st.w_data.eq(0)]
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == self.nodes - 1):
                m.d.sync += clearing.eq(0)
        return st, clearing

    def _counters(self, m, streams, take, take_data, take_ctrl, up_now, cont_start, choice):
        """``stat_bytes`` and ``stat_containers`` per uplink, a clock after the beat
        (``take``: a beat of ``streams`` (control, data) moves to the output register,
        ``take_data``: a data beat, ``take_ctrl``: a control beat, on uplink ``up_now``;
        ``cont_start``: a container starts on ``choice``). Returns the registered data
        beat ``(valid, uplink, bytes)`` for the loads."""
        U, B = self.uplinks, self.data_width // 8
        ubits = max(1, (U - 1).bit_length())
        # each stream's byte count from its registered keep, then the one taken (the
        # count does not wait for the pick)
        ncs = [Signal(range(B + 1), name=f"nbytes_{n}") for n in ("ctrl", "data")]
        for n, st in zip(ncs, streams):
            m.d.comb += n.eq(sum(st.payload.keep[k] for k in range(B)))
        nbytes = Mux(take_ctrl, ncs[0], ncs[1])
        acc_v, acc_data, acc_up, acc_n = Signal(), Signal(), Signal(ubits), Signal(range(B + 1))
        acc_cont, acc_cont_up = Signal(), Signal(ubits)
        m.d.sync += [
            acc_v.eq(take),
            acc_data.eq(take_data),
            acc_up.eq(up_now),
            acc_n.eq(nbytes),
            acc_cont.eq(cont_start),
            acc_cont_up.eq(choice),
        ]
        for i in range(U):
            with m.If(acc_v & (acc_up == i)):
                m.d.sync += self.stat_bytes[i].eq(self.stat_bytes[i] + acc_n)
            with m.If(acc_cont & (acc_cont_up == i)):
                m.d.sync += self.stat_containers[i].eq(self.stat_containers[i] + 1)
        return acc_data, acc_up, acc_n

    def _loads(self, m, acc, choice_ok, min_load, healthy, healthy_prev, load):
        """The least-loaded policy's byte loads: each uplink's data bytes (``acc``, from
        :meth:`_counters`), all lowered together by ``LOAD_NORM`` when the least loaded
        one reaches it (every other clock at most); a rejoining uplink starts at the
        least load."""
        acc_data, acc_up, acc_n = acc
        norm = Signal()
        m.d.sync += norm.eq(~norm & choice_ok & (min_load >= LOAD_NORM))  # every other clock at most
        for i in range(self.uplinks):
            inc = Mux(acc_data & (acc_up == i), acc_n, 0)
            with m.If(healthy[i] & ~healthy_prev[i]):
                m.d.sync += load[i].eq(min_load)  # a rejoining link starts level
            with m.Else():
                dec = Mux(norm, Mux(load[i] >= LOAD_NORM, LOAD_NORM, load[i]), 0)
                m.d.sync += load[i].eq(load[i] + inc - dec)


EXPORTS = [
    BlockSpec(
        name="sprayer",
        module="gse_container_sprayer",
        factory=ContainerSprayer,
        params={"data_width": 64, "uplinks": 4, "nodes": 16, "policy": 0},
        description="PKTC container sprayer: stamps FIRST/LAST/seq/len/dgsq/ttl and sends each "
        "container whole on one healthy uplink (round-robin or least-loaded); "
        "control frames with strict priority",
        aliases=("pktc",),
    )
]

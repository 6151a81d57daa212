"""HostClassify: a host port's frames stored, looked up, and described for the tagger
and the DGSQ manager."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...header.gse_header import ETH_HEADER_BYTES, GSE_ETHERTYPE, GSE_HEADER_BYTES, GSEType
from ...header.tagger import TaggerHeaderLayout
from ...lib.skid_buffer import SkidBuffer
from ...lib.stream import AXIStreamSignature, check_data_width
from .dest_lookup import dest_result_layout
from .ingress_store import IngressStore

__all__ = ["HostClassify", "classify_info_layout"]

DA_BYTES = 6


def classify_info_layout():
    """What the store keeps with each frame: the lookup's answer, ``spoof`` (the frame
    already carries the GSE EtherType) and ``drop`` (missed or spoof: decided before the
    store, so that the read side finds it in one flip-flop)."""
    return data.StructLayout({"dest": dest_result_layout(), "spoof": 1, "drop": 1})


class HostClassify(wiring.Component):
    """The head of a host port's ingress: :class:`IngressStore`, the destination lookup
    of each frame, and one header per frame for the tagger and the DGSQ manager.

    Parameters: ``data_width`` (8..64: the destination MAC must be complete before a
    14-byte frame's last beat), ``store_depth`` (beats), ``xoff_bytes``/``xon_bytes``
    (pause thresholds of the store), ``ttl`` (of the tags), ``ethertype``,
    ``with_pkt`` (1: drive ``m_pkt`` for a DGSQ manager; 0: ECMP mode, no ``m_pkt``),
    ``max_frame_bytes`` (longer frames are dropped at the store, ``stat_store_drop_long``;
    0: none), ``lookup_latency`` (0 or 2: clocks from ``lookup_key`` to its
    ``lookup_result``, the table's ``latency``; the beats wait as long before the store).

    Interface:

    * ``s_axis`` (in, always ready), ``pause`` (out): the host link (see
      :class:`IngressStore`; frames below 14 bytes are runts).
    * ``lookup_key`` (out, 48) / ``lookup_result`` (in): the destination MAC of the frame
      being received and the table's answer (:class:`~.dest_lookup.DestLookup`, one
      port of it); sampled when the frame's last beat is stored.
    * ``node_id``, ``tc``, ``tenant`` (in): this port's node and its frames' class and
      tenant, stamped into every header.
    * ``m_axis`` (out): the frames to tag; ``m_hdr`` (out, :data:`TaggerHeaderLayout`)
      one per frame (type DATA, ``src_node`` = ``node_id``, ``dst_node``/``port`` from
      the table, ``len`` = the frame's length, ``ttl``); ``m_pkt`` (out,
      :func:`~opengse.rtl.interfaces.packet_descriptor`) one per frame with ``bytes`` =
      the tagged length.
    * ``start_ok`` (in): a frame's first beat may leave only while it is 1 (the leaf
      holds new frames while the VOQ buffer lacks room for one: lossless).
    * Counters: ``stat_frames`` (frames passed on), ``stat_drop_unknown`` (destination
      MAC not in the table), ``stat_drop_spoof`` (GSE EtherType from a host), and the
      store's ``stat_store_*``.

    Timing: the input register, ``lookup_latency`` registers, and one in front of the
    store (2 clocks + ``lookup_latency``: the lookup's answer is registered there), then
    the store's (its beats 3 clocks after a frame's last beat, through its output slice)
    and a register slice on its descriptors (2 + 1 clocks) plus nothing: the descriptors
    are presented with the frame's first beat, the beats pass combinationally, one per
    clock, no bubble between frames. A frame leaves once its ``m_hdr`` and ``m_pkt``
    have both been taken and its last beat has passed. ``start_ok`` is registered (acts
    a clock late); the counters count a clock after their event.
    """

    def __init__(
        self,
        data_width=64,
        store_depth=2048,
        xoff_bytes=None,
        xon_bytes=None,
        ttl=64,
        ethertype=GSE_ETHERTYPE,
        with_pkt=1,
        max_frame_bytes=0,
        lookup_latency=0,
    ):
        self.data_width = check_data_width(data_width)
        if data_width > 64:
            raise ValueError("HostClassify supports data_width up to 64 bits")
        self.ttl, self.ethertype, self.with_pkt = ttl, ethertype, with_pkt
        self.lookup_latency = lookup_latency
        info = classify_info_layout()
        self.store = IngressStore(
            store_depth,
            data_width,
            info_width=info.size,
            xoff_bytes=xoff_bytes,
            xon_bytes=xon_bytes,
            min_bytes=ETH_HEADER_BYTES,
            max_bytes=max_frame_bytes,
        )
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "pause": Out(1),
            "lookup_key": Out(48),
            "lookup_result": In(dest_result_layout()),
            "node_id": In(16),
            "tc": In(3),
            "tenant": In(interfaces.FIELD_BITS["tenant"]),
            "start_ok": In(1),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "m_hdr": Out(stream.Signature(TaggerHeaderLayout)),
            "stat_frames": Out(32),
            "stat_drop_unknown": Out(32),
            "stat_drop_spoof": Out(32),
        }
        if with_pkt:
            members["m_pkt"] = Out(interfaces.packet_descriptor())
        for name in ("frames", "drop_overflow", "drop_bad", "drop_runt", "drop_long", "pause_cycles"):
            members[f"stat_store_{name}"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.store = store = self.store
        bpb = self.data_width // 8
        # the input beat is registered first (the store is always ready): the host
        # link's receive side (a MAC's crossing FIFO) reaches the store's length and drop
        # logic and the header capture below only through flip-flops
        s = AXIStreamSignature(self.data_width).create(path=("in_beat",))
        m.d.sync += [s.valid.eq(self.s_axis.valid), s.payload.eq(self.s_axis.payload)]
        m.d.comb += [self.s_axis.ready.eq(1), self.pause.eq(store.pause)]

        # -- write side: the first 14 bytes of the frame being received
        nhead = ETH_HEADER_BYTES
        beats = (nhead + bpb - 1) // bpb
        beat = Signal(range(beats + 1))
        held = [Signal(8, name=f"head_{k}") for k in range(nhead)]
        cur = []  # each byte as of this beat: the live lane in its beat, else the register
        for k in range(nhead):
            lane = s.payload.data.word_select(k % bpb, 8)
            live = Signal(8, name=f"head_live_{k}")
            m.d.comb += live.eq(held[k])
            with m.If(beat == k // bpb):
                m.d.comb += live.eq(lane)
                with m.If(s.valid):
                    m.d.sync += held[k].eq(lane)
            cur.append(live)
        with m.If(s.valid):
            with m.If(s.payload.last):
                m.d.sync += beat.eq(0)
            with m.Elif(beat < beats):
                m.d.sync += beat.eq(beat + 1)
        info = Signal(classify_info_layout())
        spoof = Signal()
        m.d.comb += [
            self.lookup_key.eq(Cat(*held[:DA_BYTES])),
            spoof.eq(Cat(cur[13], cur[12]) == self.ethertype),
        ]
        # the beats (and the EtherType verdict) wait lookup_latency clocks for the
        # table's answer to the key of their clock
        for k in range(self.lookup_latency):
            d = AXIStreamSignature(self.data_width).create(path=(f"lookup_wait_{k}",))
            d_spoof = Signal(name=f"lookup_wait_{k}_spoof")
            m.d.sync += [d.valid.eq(s.valid), d.payload.eq(s.payload), d_spoof.eq(spoof)]
            s, spoof = d, d_spoof
        m.d.comb += [
            info.dest.eq(self.lookup_result),
            info.spoof.eq(spoof),
            info.drop.eq(~info.dest.hit | info.spoof),
        ]
        # the store takes the beats a clock later, with the info registered: the table's
        # match logic (and the EtherType compare) end in a flip-flop, not in the
        # descriptor memory's write data through the store's write logic
        s2 = AXIStreamSignature(self.data_width).create(path=("store_beat",))
        info_r = Signal(classify_info_layout())
        m.d.sync += [s2.valid.eq(s.valid), s2.payload.eq(s.payload), info_r.eq(info)]
        m.d.comb += [
            store.s_axis.valid.eq(s2.valid),
            store.s_axis.payload.eq(s2.payload),
            store.info.eq(info_r),
        ]

        # -- read side: one frame at a time, its two headers forked off
        # the store's descriptors through a register slice: the pop below (from the
        # block RAM's last bit and the consumers' ready) loads registers, not the
        # descriptor memory's read address
        m.submodules.desc_skid = desc_skid = SkidBuffer(store.m_desc.payload.shape())
        wiring.connect(m, store.m_desc, desc_skid.s)
        d, f, o = desc_skid.m, store.m_axis, self.m_axis
        dinfo = Signal(classify_info_layout())
        m.d.comb += dinfo.eq(d.payload.info)
        drop = dinfo.drop
        hdr_done, pkt_done, beats_done, in_frame = (
            Signal(name=n) for n in ("hdr_done", "pkt_done", "beats_done", "in_frame")
        )
        # go_ok = start_ok (registered: it acts a clock late, which the VOQ's reserve
        # covers) | in_frame | pkt_done, as one register: the pop below and the beats'
        # ready see one flip-flop, not the VOQ's free-cell compare or three of them
        go_ok = Signal()
        h = self.m_hdr.payload
        m.d.comb += [
            h.type.eq(GSEType.DATA.value),
            h.flags.eq(0),
            h.tc.eq(self.tc),
            h.tenant.eq(self.tenant),
            h.src_node.eq(self.node_id),
            h.dst_node.eq(dinfo.dest.dst_node),
            h.port.eq(dinfo.dest.port),
            h.ttl.eq(self.ttl),
            h.seq.eq(0),
            h.len.eq(d.payload.len),
            h.dgsq.eq(0),
            self.m_hdr.valid.eq(d.valid & ~drop & ~hdr_done),
        ]
        hdr_now = hdr_done | self.m_hdr.ready
        pkt_now = 1
        if self.with_pkt:
            p = self.m_pkt.payload
            m.d.comb += [
                p.dst_node.eq(dinfo.dest.dst_node),
                p.port.eq(dinfo.dest.port),
                p.tc.eq(self.tc),
                p.tenant.eq(self.tenant),
                p.bytes.eq(d.payload.len + GSE_HEADER_BYTES),
                # offered only once the frame may start: the manager holds its event
                # engine until the VOQ takes this packet's metadata, which it does with
                # the packet's data; a descriptor sent while start_ok holds the data
                # back would leave the engine unable to take the GRANTs that free the
                # VOQ (and the GRANT waiting for it blocks the leaf's control decoder)
                self.m_pkt.valid.eq(d.valid & ~drop & ~pkt_done & go_ok),
            ]
            pkt_now = pkt_done | self.m_pkt.ready
        # a frame whose descriptor the manager has taken is committed: it goes on even if
        # start_ok falls meanwhile (the VOQ margin covers it, as for a frame under way)
        may_beat = d.valid & ~beats_done & (go_ok | drop)
        m.d.comb += [
            o.payload.eq(f.payload),
            o.valid.eq(f.valid & may_beat & ~drop),
            f.ready.eq(may_beat & (drop | o.ready)),
        ]
        beat_go = f.valid & f.ready
        last_now = beats_done | (beat_go & f.payload.last)
        pop = d.valid & (drop | (hdr_now & pkt_now)) & last_now
        m.d.comb += d.ready.eq(pop)
        # the counters count a clock after the pop: their strobes are registers
        inc = {n: Signal(name=f"inc_{n}") for n in ("frames", "drop_spoof", "drop_unknown")}
        m.d.sync += [
            inc["frames"].eq(pop & ~drop),
            inc["drop_spoof"].eq(pop & drop & dinfo.spoof),
            inc["drop_unknown"].eq(pop & drop & ~dinfo.spoof),
        ]
        for n, v in inc.items():
            with m.If(v):
                m.d.sync += getattr(self, f"stat_{n}").eq(getattr(self, f"stat_{n}") + 1)
        pkt_take = (self.m_pkt.valid & self.m_pkt.ready) if self.with_pkt else 0
        m.d.sync += go_ok.eq(self.start_ok | (~pop & (in_frame | beat_go | pkt_done | pkt_take)))
        with m.If(pop):
            m.d.sync += [hdr_done.eq(0), pkt_done.eq(0), beats_done.eq(0), in_frame.eq(0)]
        with m.Else():
            with m.If(self.m_hdr.valid & self.m_hdr.ready):
                m.d.sync += hdr_done.eq(1)
            with m.If(pkt_take):
                m.d.sync += pkt_done.eq(1)
            with m.If(beat_go):
                m.d.sync += in_frame.eq(1)
                with m.If(f.payload.last):
                    m.d.sync += beats_done.eq(1)

        for name in ("frames", "drop_overflow", "drop_bad", "drop_runt", "drop_long", "pause_cycles"):
            m.d.comb += getattr(self, f"stat_store_{name}").eq(getattr(store, f"stat_{name}"))
        return m

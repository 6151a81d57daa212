"""ControlSpread: a host pipeline's REQUEST/GRANT frames onto the healthy uplinks."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...header.gse_header import ETH_HEADER_BYTES, GSE_FIELDS
from ...lib.packet_demux import PacketDemux
from ...lib.round_robin import next_in_turn
from ...lib.select_window import select_window
from ...lib.stream import AXIStreamSignature

__all__ = ["ControlSpread", "KEY_BYTES"]


def _field_bytes(name):
    for fname, off, n, _lsb, _width in GSE_FIELDS:
        if fname == name:
            return [ETH_HEADER_BYTES + off + i for i in range(n)]
    raise KeyError(name)


#: Frame bytes of a control frame's queue key: its ``dst_node`` and ``dgsq`` (the
#: requester's queue in a REQUEST and in the GRANT that answers it).
KEY_BYTES = _field_bytes("dst_node") + _field_bytes("dgsq")


class ControlSpread(wiring.Component):
    """Whole control frames from ``s_axis`` to one of ``m_axis[0..U-1]``: spread over
    the uplinks by queue, each queue's frames on one uplink (GSE mode with per-host
    uplink queues: the control frames go round the queues, so that a GRANT or REQUEST
    never waits behind a container queued for an uplink, see
    :class:`~.uplink_tx.UplinkTx`).

    The uplink of a frame is its queue's: the XOR of its ``dst_node`` and ``dgsq``
    bytes (:data:`KEY_BYTES`), folded to ``ceil(log2 U)`` bits and taken modulo U, or,
    if that uplink is not healthy, the next healthy one in turn. So a queue's REQUESTs,
    and the GRANTs of a queue of the same far leaf, keep their order while the healthy
    set stays: frames taken in turn over the uplinks overtook each other whenever one
    waited behind a long data frame (a 9000-byte frame holds an uplink 1125 clocks at
    64 bits), and REQUESTs and GRANTs out of order cost the DGSQ resynchronisations
    (GRANT seq gaps) and throughput.

    Parameters: ``data_width``, ``uplinks`` U (1..16).

    Interface: ``s_axis`` (in, AXI-Stream; ``tready`` a register, low only while the
    window below is full), ``m_axis[u]`` (out), ``healthy`` (in, U bits: the link
    monitor's set; with none healthy the frames wait).

    Timing: the key is in beat ``k = 29 // (data_width / 8)`` (3 at 64 bits), so a
    frame passes a window of ``k + 2`` registered beats
    (:func:`~opengse.rtl.lib.select_window.select_window`); its preferred uplink is
    made as beat ``k`` enters and waits in a register FIFO; the uplink is chosen from it
    and ``healthy`` as the frame's first beat enters the
    :class:`~opengse.rtl.lib.packet_demux.PacketDemux` (output register: 1 clock), so a
    frame never changes uplink. One beat per clock; latency ``k + 2`` clocks. A frame
    shorter than the key gets the key of the bytes it had.
    """

    def __init__(self, data_width=64, uplinks=2):
        if not 1 <= uplinks <= 16:
            raise ValueError("uplinks must be 1..16")
        self.data_width, self.uplinks = data_width, uplinks
        self.demux = PacketDemux(uplinks, data_width)
        sig = AXIStreamSignature(data_width)
        super().__init__({"s_axis": In(sig), "m_axis": Out(sig).array(uplinks), "healthy": In(uplinks)})

    def elaborate(self, platform):
        m = Module()
        U, bpb = self.uplinks, self.data_width // 8
        m.submodules.demux = demux = self.demux
        for u in range(U):
            wiring.connect(m, demux.m_axis[u], wiring.flipped(self.m_axis[u]))
        s = self.s_axis
        k = max(KEY_BYTES) // bpb  # the beat that completes the key
        ub = max(1, (U - 1).bit_length())
        win = select_window(m, s, demux, k, range(U), name="win")

        # The key's bytes as they pass (those of earlier beats held), folded per beat.
        held = {n: Signal(8, name=f"key{n}") for n in KEY_BYTES if n // bpb < k}
        cur = []
        for n in KEY_BYTES:
            byte = s.payload.data[8 * (n % bpb) : 8 * (n % bpb) + 8]
            cur.append(byte if n // bpb == k else held[n])
            if n in held:
                with m.If(win.push & (win.idx == n // bpb)):
                    m.d.sync += held[n].eq(byte)
        fold = 0
        for b in cur:
            for i in range(0, 8, ub):
                fold = fold ^ b[i : i + ub]
        h = Signal(ub)
        m.d.comb += [h.eq(fold), win.sel_in.eq(Mux(h >= U, h - U, h) if (1 << ub) != U else h)]

        # The uplink: the preferred one if healthy, else the next healthy one in turn.
        pref = win.sel
        nxt, nxt_ok = next_in_turn(m, self.healthy, pref)
        ok = self.healthy.bit_select(pref, 1)
        m.d.comb += [
            demux.s_sel.valid.eq(win.sel_valid & (ok | nxt_ok)),
            demux.s_sel.payload.index.eq(Mux(ok, pref, nxt)),
        ]
        return m

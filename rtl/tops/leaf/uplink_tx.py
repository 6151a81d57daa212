"""UplinkTx: what one uplink sends, PROBEs first, then the host pipelines' frames."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...lib.packet_mux import PRIORITY, ROUND_ROBIN, PacketMux
from ...lib.skid_buffer import SkidBuffer
from ...lib.stream import AXIStreamSignature, axis_beat_layout
from ..packet_buffer import PacketBuffer
from ...lib.pause_gate import PauseGate

__all__ = ["UplinkTx", "PROBE_TTL"]

#: A PROBE leaves with ``dst_node`` = the leaf's ``node_base`` and this ``ttl``: the spine
#: forwards it (one hop, ``ttl`` - 1) back down the same link to this leaf.
PROBE_TTL = 2
_DST_NODE_BYTE = 14 + 6  # frame bytes 20, 21 (big-endian)
_TTL_BYTE = 14 + 9  # frame byte 23


def _reflect_probe(m, src, dst, node, bpb):
    """``dst`` = ``src`` (PROBE frames) with ``dst_node`` = ``node`` and ``ttl`` =
    :data:`PROBE_TTL`; no register."""
    beat = Signal(range(_TTL_BYTE // bpb + 2), name="probe_beat")
    m.d.comb += [dst.valid.eq(src.valid), src.ready.eq(dst.ready), dst.payload.eq(src.payload)]
    for k, value in ((_DST_NODE_BYTE, node[8:16]), (_DST_NODE_BYTE + 1, node[:8]), (_TTL_BYTE, PROBE_TTL)):
        with m.If(beat == k // bpb):
            m.d.comb += dst.payload.data.word_select(k % bpb, 8).eq(value)
    with m.If(src.valid & src.ready):
        with m.If(src.payload.last):
            m.d.sync += beat.eq(0)
        with m.Elif(beat <= _TTL_BYTE // bpb):
            m.d.sync += beat.eq(beat + 1)


class UplinkTx(wiring.Component):
    """One uplink's transmit side: ``s_probe`` (the link monitor's PROBEs, readdressed:
    ``dst_node`` = ``node_base``, ``ttl`` = :data:`PROBE_TTL`, so that the spine sends
    each back down the same link and a PROBE received on uplink u proves both
    directions through spine u; in a loopback they return as they are) with strict
    priority over a round-robin of ``s_host[0..H-1]`` (each host pipeline's frames for
    this uplink), whole frames; the data (not the PROBEs) pass a
    :class:`~opengse.rtl.lib.pause_gate.PauseGate` on ``pause_in`` first.

    Parameters: ``data_width``, ``hosts`` H (1..15), ``queue_bytes`` (0: none; else a
    store-and-forward :class:`~opengse.rtl.tops.packet_buffer.PacketBuffer` of that many
    bytes, a power of two of beats, after the round-robin: the output queue of the ECMP
    mode, where frames are pushed at once and wait here while the uplink is paused),
    ``host_queue_bytes`` (0: none; else one such buffer per ``s_host[h]`` before the
    round-robin: GSE mode, where two host pipelines' containers on one uplink are taken
    at line rate and drain while the pipelines go on to other uplinks; a frame waits
    there until it is whole, one frame time more).

    Interface: ``s_probe``, ``s_host[h]`` (in, AXI-Stream), ``m_axis`` (out, the link;
    its ``tready`` is honoured, a fabric link holds it at 1), ``pause_in`` (in: the far
    end's pause; no new data frame starts while it is 1; PROBEs still go), ``tx_data``
    (out, a register: a one-clock pulse in the clock after the last beat of a frame
    from ``s_host`` enters the output mux, for the link monitor: this link carried
    traffic), counters
    ``stat_frames`` (frames sent), ``stat_probes``, ``stat_pause_cycles``,
    ``stat_held_cycles``, ``stat_drop_queue`` (frames its queues dropped whole: bad or
    longer than the queue; with the leaf's frame limit neither happens).

    Timing: two mux registers and a skid buffer: latency 3 clocks; one beat per clock,
    no bubble between frames.
    """

    def __init__(self, data_width=64, hosts=4, queue_bytes=0, host_queue_bytes=0):
        self.hosts, self.bpb = hosts, data_width // 8
        self.queue = PacketBuffer(queue_bytes // (data_width // 8), data_width) if queue_bytes else None
        hq = host_queue_bytes // self.bpb
        self.host_queues = [PacketBuffer(hq, data_width) for _ in range(hosts)] if hq else []
        # with the queues, the host pipelines' control frames come apart (s_ctrl) and go
        # ahead of the data, so that none waits behind a queued container
        self.ctrl_rr = PacketMux(max(2, hosts), data_width, policy=ROUND_ROBIN) if hq else None
        self.ctrl_prio = PacketMux(2, data_width, policy=PRIORITY) if hq else None
        self.rr = PacketMux(max(2, hosts), data_width, policy=ROUND_ROBIN) if hosts > 1 else None
        self.prio = PacketMux(2, data_width, policy=PRIORITY)
        self.skid = SkidBuffer(axis_beat_layout(data_width))
        self.gate = PauseGate(data_width)
        sig = AXIStreamSignature(data_width)
        super().__init__(
            {
                "s_probe": In(sig),
                "node_base": In(16),
                "s_host": In(sig).array(hosts),
                **({"s_ctrl": In(sig).array(hosts)} if hq else {}),
                "m_axis": Out(sig),
                "pause_in": In(1),
                "tx_data": Out(1),
                "stat_frames": Out(32),
                "stat_probes": Out(32),
                "stat_pause_cycles": Out(32),
                "stat_held_cycles": Out(32),
                "stat_drop_queue": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.prio = prio = self.prio
        m.submodules.skid = skid = self.skid
        m.submodules.gate = gate = self.gate
        _reflect_probe(m, wiring.flipped(self.s_probe), prio.s_axis[0], self.node_base, self.bpb)
        if self.rr is not None:
            m.submodules.rr = rr = self.rr
            for h in range(self.hosts):
                wiring.connect(m, self._host_frames(m, h), rr.s_axis[h])
            data = rr.m_axis
        else:
            data = self._host_frames(m, 0)
        if self.queue is not None:
            m.submodules.queue = queue = self.queue
            wiring.connect(m, data, queue.s_axis)
            data = queue.m_axis
        if self.ctrl_prio is not None:
            m.submodules.ctrl_rr = crr = self.ctrl_rr
            m.submodules.ctrl_prio = cp = self.ctrl_prio
            for h in range(self.hosts):
                wiring.connect(m, wiring.flipped(self.s_ctrl[h]), crr.s_axis[h])
            wiring.connect(m, crr.m_axis, cp.s_axis[0])
            wiring.connect(m, data, cp.s_axis[1])
            data = cp.m_axis
        # pause holds the data frames only: PROBEs (60 bytes per interval) still go, as
        # a link's keep-alives do under PFC, so a paused link is not taken for a dead one
        wiring.connect(m, data, gate.s_axis)
        wiring.connect(m, gate.m_axis, prio.s_axis[1])
        wiring.connect(m, prio.m_axis, skid.s)
        wiring.connect(m, skid.m, wiring.flipped(self.m_axis))
        # registered: the pause gate's and the mux's handshake stop here, not in the
        # link monitor's interval logic
        d = prio.s_axis[1]
        m.d.sync += self.tx_data.eq(d.valid & d.ready & d.payload.last)
        m.d.comb += [
            gate.pause.eq(self.pause_in),
            self.stat_probes.eq(prio.stat_packets[0]),
            self.stat_frames.eq(prio.stat_packets[0] + prio.stat_packets[1]),
            self.stat_pause_cycles.eq(gate.stat_pause_cycles),
            self.stat_held_cycles.eq(gate.stat_held_cycles),
            self.stat_drop_queue.eq(
                sum(q.stat_drop_bad + q.stat_drop_oversize for q in self.host_queues + [self.queue] if q)
            ),
        ]
        return m

    def _host_frames(self, m, h):
        """Host pipeline h's frames for this uplink, through its own queue if any."""
        if not self.host_queues:
            return wiring.flipped(self.s_host[h])
        m.submodules[f"host_queue_{h}"] = q = self.host_queues[h]
        wiring.connect(m, wiring.flipped(self.s_host[h]), q.s_axis)
        return q.m_axis

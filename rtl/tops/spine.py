"""GSESpine: the GSF spine switch (forward by dst_node, control ahead of data, ttl)."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import ETH_HEADER_BYTES, GSE_ETHERTYPE, GSEType
from ..header.parser import GSEParser, ParsedHeaderLayout
from ..lib.packet_demux import PacketDemux
from ..lib.packet_mux import PRIORITY, ROUND_ROBIN, PacketMux
from ..lib.pause_fifo import MAX_FRAME_BYTES, PauseFIFO, pause_thresholds
from ..lib.pause_gate import PauseGate
from ..lib.skid_buffer import SkidBuffer
from ..lib.stream import AXIStreamSignature, axis_beat_layout, check_data_width
from ..regs.bank import AXI4LiteRegisterBank
from ..regs.from_signature import connect_registers
from ..regs.system import SystemCounters
from .packet_buffer import PacketBuffer
from .spine_registers import spine_register_map

__all__ = ["GSESpine", "route_layout", "EXPORTS"]

TTL_BYTE = ETH_HEADER_BYTES + 9  # header byte 9 = frame byte 23
CONTROL_BYTES = 1024  # the control queue of each output
INPUT_COUNTERS = (
    "frames_in",
    "drop_runt",
    "drop_ver",
    "drop_type",
    "drop_ttl",
    "drop_not_gse",
    "drop_no_route",
    "err_len",
    "pause_cycles",
    "drop_overflow",
)
OUTPUT_COUNTERS = ("frames_out", "ctl_out", "drop_bad", "drop_oversize", "held_cycles")


def route_layout(ports, nodes):
    """A forwarding-table write: ``port`` >= ``ports`` removes the node's route."""
    return data.StructLayout({"node": range(nodes), "port": range(ports + 1)})


def _beats(nbytes, bytes_per_beat):
    depth = 2
    while depth * bytes_per_beat < nbytes:
        depth *= 2
    return depth


class GSESpine(wiring.Component):
    """The GSF spine: N fabric ports, forwarding by ``dst_node`` through a table.

    Parameters: ``ports`` N (2..8), ``data_width`` (64), ``nodes`` (table depth, a power
    of two), ``buffer_bytes`` (data buffer per output, one queue per input of
    ``buffer_bytes / ports``, at least one 9018 B frame, each rounded up to a power of two
    beats; default 18432 = two 9000 B frames and change), ``ethertype``, ``delay`` (the
    links' delay in clocks, default 100: it sizes each input's pause store,
    :func:`~opengse.rtl.lib.pause_fifo.pause_thresholds` with 9018 B frames; 64-bit,
    delay 100: 16 KB, XOFF 5632 B, XON 2816 B).

    Interface:

    * ``s_axis_<i>`` / ``m_axis_<i>``: fabric port i (AXI4-Stream; ``tuser`` on a last
      beat = bad frame). Frames leave with ``ttl`` one lower, otherwise unchanged.
      ``s_axis_<i>_tready`` is always 1: each input starts with a
      :class:`~opengse.rtl.lib.pause_fifo.PauseFIFO`.
    * ``pause_<i>`` (out, registered): input i's store is above XOFF (until below XON):
      the link carries it back to the sender, which starts no new frame while it is 1.
    * ``pause_in_<o>`` (in): the receiver behind output o asks it to stop: no new data
      frame starts on ``m_axis_<o>`` while it is 1; a frame already started finishes
      (:class:`~opengse.rtl.lib.pause_gate.PauseGate` on the data queue); control
      frames (REQUEST, GRANT, PROBE) still go, as at the leaf's uplinks. Data frames then back up into the
      output's queues, its muxes, the inputs that feed it, their stores, and so into
      ``pause_<i>`` upstream (head-of-line blocking, as with PFC).
    * ``s_axil_*`` (AXI4-Lite, 32-bit): the forwarding table and every counter, the
      map of :func:`~.spine_registers.spine_register_map` (docs/spine.md, Registers):
      ``spine.route_node`` / ``route_port``, a write of ``spine.route_write`` sets the
      entry; ``in.<counter>[i]``, ``out.<counter>[o]``.
    * With ``config_ports`` = True instead of the bank (a simulation harness that
      writes the table and samples counters without bus transactions, as
      sim/fabric/top.py does), the same as ports:
    * ``s_route`` (valid/ready, always ready): write ``{node, port}`` into the table;
      it applies to every frame whose header is looked up from the next clock on.
      After reset every node has no route (``port`` = N). ``route_rd_node`` /
      ``route_rd_port``: combinational read-back of one entry.
    * ``stat_<counter>_<i>`` per input: ``frames_in`` (last beats taken), the
      parser's drops ``drop_runt``, ``drop_ver``, ``drop_type``, ``drop_ttl`` (ttl 0 on
      arrival), ``drop_not_gse`` (no GSE EtherType), ``drop_no_route`` (``dst_node`` >=
      ``nodes``, or its entry has no port), and
      ``err_len`` (DATA ``len`` wrong: flagged in ``tuser``, then dropped at the output),
      ``pause_cycles`` (clocks with ``pause_<i>`` = 1), ``drop_overflow`` (frames the
      input store had no room for: the sender ignored pause, or the headroom is too
      small for the link);
      per output: ``frames_out``, ``ctl_out`` (of which control), ``drop_bad`` (frames
      with ``tuser`` on their last beat, dropped whole by the output queue),
      ``drop_oversize`` (longer than the data queue), ``held_cycles`` (clocks a frame
      waited at the output because of ``pause_in_<o>``). All 32-bit, wrapping.

    Path of a frame: pause store -> parser (strip 0; checks within the first 32 bytes) -> skid -> ttl
    decrement -> demux by table lookup to its output's control round-robin mux (REQUEST,
    GRANT, PROBE) -> skid -> control queue, or to the data queue of (this input, its
    output) (skids before and after) -> the output's data round-robin mux of its N
    queues -> pause gate; both store-and-forward -> strict-priority mux (control first,
    whole packets) -> ``m_axis_<o>``.
    A full queue stalls the demux that feeds it (lossless): its input waits whole
    (head-of-line blocking as with PFC). An input whose frame's output is busy with
    another input's frame does not wait: each (input, output) has its own data queue
    (see docs/spine.md, Head-of-line blocking).
    """

    def __init__(
        self,
        ports=4,
        data_width=64,
        nodes=16,
        buffer_bytes=18432,
        ethertype=GSE_ETHERTYPE,
        delay=100,
        config_ports=False,
    ):
        if not isinstance(ports, int) or not 2 <= ports <= 8:
            raise ValueError(f"ports must be 2..8, not {ports!r}")
        if not isinstance(nodes, int) or nodes < 2 or nodes & (nodes - 1):
            raise ValueError(f"nodes must be a power of two >= 2, not {nodes!r}")
        if buffer_bytes < 64:
            raise ValueError(f"buffer_bytes must be >= 64, not {buffer_bytes!r}")
        self.ports, self.nodes, self.ethertype = ports, nodes, ethertype
        self.data_width = check_data_width(data_width)
        self.data_depth = _beats(buffer_bytes, self.data_width // 8)
        # the data queue of each (input, output): its share of buffer_bytes, but at least
        # one largest frame
        self.io_depth = max(
            _beats(buffer_bytes // ports, self.data_width // 8), _beats(MAX_FRAME_BYTES, self.data_width // 8)
        )
        self.ctl_depth = _beats(CONTROL_BYTES, self.data_width // 8)
        if not isinstance(delay, int) or delay < 0:
            raise ValueError(f"delay must be a number of clocks >= 0, not {delay!r}")
        self.delay = delay
        self.pause_sizes = pause_thresholds(delay, MAX_FRAME_BYTES, self.data_width)
        sig = AXIStreamSignature(data_width)
        members = {
            "s_axis": In(sig).array(ports),
            "m_axis": Out(sig).array(ports),
            "pause": Out(1).array(ports),
            "pause_in": In(1).array(ports),
        }
        config = {
            "s_route": In(stream.Signature(route_layout(ports, nodes))),
            "route_rd_node": In(range(nodes)),
            "route_rd_port": Out(range(ports + 1)),
        }
        for name in INPUT_COUNTERS + OUTPUT_COUNTERS:
            config[f"stat_{name}"] = Out(32).array(ports)
        self.config_ports = bool(config_ports)
        if self.config_ports:
            members.update(config)
        else:
            self.regmap = spine_register_map(self)
            self.bank = AXI4LiteRegisterBank(self.regmap)
            bus = self.bank.signature.members
            members.update({n: mb for n, mb in bus.items() if n.startswith("s_axil_")})
        super().__init__(members)
        if not self.config_ports:
            # the same names as the ports, inside: the bank drives and reads them
            inside = wiring.Signature(config).create(path=("cfg",))
            for name in config:
                setattr(self, name, getattr(inside, name))

    def elaborate(self, platform):
        m = Module()
        n, w = self.ports, self.data_width
        if not self.config_ports:
            self._registers(m)

        # -- forwarding table (registers; port n = no route)
        table = Array(Signal(range(n + 1), name=f"route_{k}", init=n) for k in range(self.nodes))
        m.d.comb += [self.s_route.ready.eq(1), self.route_rd_port.eq(table[self.route_rd_node])]
        with m.If(self.s_route.valid):
            m.d.sync += table[self.s_route.payload.node].eq(self.s_route.payload.port)

        def route(h):
            port = table[h.dst_node]
            control = (h.type == GSEType.REQUEST) | (h.type == GSEType.GRANT) | (h.type == GSEType.PROBE)
            unrouted = (h.dst_node >= self.nodes) | (port >= n)
            return Mux(~h.gse | unrouted, 2 * n, Mux(control, port, n + port))

        demuxes = []
        for i in range(n):
            parser = GSEParser(w, strip=0, ethertype=self.ethertype)
            demux = PacketDemux(2 * n, w, sel_layout=ParsedHeaderLayout, route=route)
            m.submodules[f"parser_{i}"] = parser
            m.submodules[f"demux_{i}"] = demux
            demuxes.append(demux)
            depth, xoff, xon = self.pause_sizes
            m.submodules[f"pause_fifo_{i}"] = store = PauseFIFO(w, depth, xoff, xon)
            wiring.connect(m, wiring.flipped(self.s_axis[i]), store.s_axis)
            wiring.connect(m, store.m_axis, parser.s_axis)
            m.d.comb += [
                self.pause[i].eq(store.pause),
                self.stat_pause_cycles[i].eq(store.stat_pause_cycles),
                self.stat_drop_overflow[i].eq(store.stat_drop_overflow),
            ]
            wiring.connect(m, parser.m_hdr, demux.s_sel)
            # the skid cuts the ready path from the outputs back into the parser
            m.submodules[f"in_skid_{i}"] = skid = SkidBuffer(axis_beat_layout(w))
            wiring.connect(m, parser.m_axis, skid.s)
            self._ttl_decrement(m, skid.m, demux.s_axis)

            s = self.s_axis[i]
            with m.If(s.valid & s.ready & s.payload.last):
                m.d.sync += self.stat_frames_in[i].eq(self.stat_frames_in[i] + 1)
            h = parser.m_hdr
            with m.If(h.valid & h.ready):
                with m.If(~h.payload.gse):
                    m.d.sync += self.stat_drop_not_gse[i].eq(self.stat_drop_not_gse[i] + 1)
                with m.Elif((h.payload.dst_node >= self.nodes) | (table[h.payload.dst_node] >= n)):
                    m.d.sync += self.stat_drop_no_route[i].eq(self.stat_drop_no_route[i] + 1)
            for name in ("drop_runt", "drop_ver", "drop_type", "drop_ttl", "err_len"):
                m.d.comb += getattr(self, f"stat_{name}")[i].eq(getattr(parser, f"stat_{name}"))

        for o in range(n):
            self._output(m, o, demuxes)
        return m

    def _output(self, m, o, demuxes):
        """Output ``o``: control RR mux -> skid -> control queue; each input's data for
        ``o`` into its own queue (input i, output o), a RR mux of those -> pause gate;
        strict priority (control first) -> ``m_axis_<o>``."""
        n, w = self.ports, self.data_width
        ctl_mux = PacketMux(n, w, policy=ROUND_ROBIN)
        data_mux = PacketMux(n, w, policy=ROUND_ROBIN)
        ctl_buf = PacketBuffer(self.ctl_depth, w)
        out_mux = PacketMux(2, w, policy=PRIORITY)
        for name, sub in (
            ("ctl_mux", ctl_mux),
            ("data_mux", data_mux),
            ("ctl_buf", ctl_buf),
            ("out_mux", out_mux),
        ):
            m.submodules[f"{name}_{o}"] = sub
        data_bufs = []
        for i in range(n):
            wiring.connect(m, demuxes[i].m_axis[o], ctl_mux.s_axis[i])
            # one data queue per (input, output): an input whose frames for o wait (o is
            # busy with another input's frame) still passes its frames for other outputs
            # (no head-of-line blocking from the merge); skids cut the ready path from
            # the queue's full flag and the SRAM read address from the mux's tready
            buf = PacketBuffer(self.io_depth, w)
            data_bufs.append(buf)
            m.submodules[f"data_buf_{i}_{o}"] = buf
            m.submodules[f"data_skid_{i}_{o}"] = skid = SkidBuffer(axis_beat_layout(w))
            wiring.connect(m, demuxes[i].m_axis[n + o], skid.s)
            wiring.connect(m, skid.m, buf.s_axis)
            m.submodules[f"data_out_skid_{i}_{o}"] = oskid = SkidBuffer(axis_beat_layout(w))
            wiring.connect(m, buf.m_axis, oskid.s)
            wiring.connect(m, oskid.m, data_mux.s_axis[i])
        m.submodules[f"ctl_skid_{o}"] = skid = SkidBuffer(axis_beat_layout(w))
        wiring.connect(m, ctl_mux.m_axis, skid.s)
        wiring.connect(m, skid.m, ctl_buf.s_axis)
        m.submodules[f"ctl_out_skid_{o}"] = skid = SkidBuffer(axis_beat_layout(w))
        wiring.connect(m, ctl_buf.m_axis, skid.s)
        wiring.connect(m, skid.m, out_mux.s_axis[0])
        # pause holds data only: control frames (PROBE, REQUEST, GRANT) are their own
        # class, as at the leaf's uplinks (UplinkTx). Holding them let a leaf that paused
        # a spine starve its own link monitor of PROBEs and take every uplink down
        # (docs/fabric.md, gse sim)
        m.submodules[f"pause_gate_{o}"] = gate = PauseGate(w)
        wiring.connect(m, data_mux.m_axis, gate.s_axis)
        wiring.connect(m, gate.m_axis, out_mux.s_axis[1])
        wiring.connect(m, out_mux.m_axis, wiring.flipped(self.m_axis[o]))
        m.d.comb += [gate.pause.eq(self.pause_in[o]), self.stat_held_cycles[o].eq(gate.stat_held_cycles)]
        m.d.comb += [
            self.stat_ctl_out[o].eq(out_mux.stat_packets[0]),
            self.stat_frames_out[o].eq(out_mux.stat_packets[0] + out_mux.stat_packets[1]),
            self.stat_drop_bad[o].eq(ctl_buf.stat_drop_bad + sum(b.stat_drop_bad for b in data_bufs)),
            self.stat_drop_oversize[o].eq(
                ctl_buf.stat_drop_oversize + sum(b.stat_drop_oversize for b in data_bufs)
            ),
        ]

    def _registers(self, m):
        """The AXI4-Lite bank: ``s_route`` from ``spine.route_*``, the read-back and
        every ``stat_*`` into the ``in`` and ``out`` blocks."""
        m.submodules.bank = bank = self.bank
        m.submodules.sys = sysc = SystemCounters(self.regmap.fingerprint())
        for name, member in bank.signature.members.items():
            if name.startswith("s_axil_"):
                ours, theirs = getattr(self, name), getattr(bank, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        connect_registers(m, bank, self.regmap["sys"], sysc, skip=("scratch",))
        m.d.comb += [
            self.s_route.valid.eq(bank.spine_route_write_written),
            self.s_route.payload.node.eq(bank.spine_route_node),
            self.s_route.payload.port.eq(bank.spine_route_port),
            self.route_rd_node.eq(bank.spine_route_node),
            bank.spine_route_rd_port.eq(self.route_rd_port),
        ]
        for block, names in (("in", INPUT_COUNTERS), ("out", OUTPUT_COUNTERS)):
            for name in names:
                for ours, theirs in zip(getattr(bank, f"{block}_{name}"), getattr(self, f"stat_{name}")):
                    m.d.comb += ours.eq(theirs)

    def _ttl_decrement(self, m, src, dst):
        """``dst`` = ``src`` with frame byte 23 (``ttl``) one lower; no register."""
        bpb = self.data_width // 8
        beat_of, lane = divmod(TTL_BYTE, bpb)
        beat = Signal(range(beat_of + 2))
        m.d.comb += [dst.valid.eq(src.valid), src.ready.eq(dst.ready), dst.payload.eq(src.payload)]
        with m.If(beat == beat_of):
            m.d.comb += dst.payload.data.word_select(lane, 8).eq(src.payload.data.word_select(lane, 8) - 1)
        with m.If(src.valid & src.ready):
            with m.If(src.payload.last):
                m.d.sync += beat.eq(0)
            with m.Elif(beat <= beat_of):
                m.d.sync += beat.eq(beat + 1)


EXPORTS = [
    BlockSpec(
        name="spine",
        module="gse_spine",
        factory=GSESpine,
        params={
            "ports": 4,
            "data_width": 64,
            "nodes": 16,
            "buffer_bytes": 18432,
            "ethertype": GSE_ETHERTYPE,
            "delay": 100,
        },
        description="GSF spine switch: N fabric ports, forwarding by dst_node through a "
        "table, ttl decrement, control frames ahead of data at every output, "
        "lossless store-and-forward output queues that drop bad frames whole; "
        "PFC-like pause: a pause store per input (pause_<i> out), pause_in_<o> obeyed "
        "at frame boundaries",
    )
]

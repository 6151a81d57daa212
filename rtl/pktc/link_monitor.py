"""Fabric link health: PROBE keep-alives on idle links, and the healthy set for the sprayer.

A link proves itself alive by what arrives on it: any good frame received on link i
(``rx_frame[i]``: data, REQUEST, GRANT or PROBE) or a PROBE (``probe_rx[i]``) counts
as liveness for the interval it arrives in. The intervals are ``interval`` clocks,
shared by all links. At the end of each interval a link with nothing received has
*missed* one.

PROBEs (``m_probe_<i>``, merged into that link's egress by the port's output mux) are
sent only where the traffic does not already prove the link: with ``idle_only`` (the
default) the PROBE due at the start of an interval is skipped on a link that, in the
interval just ended, both sent data (``tx_data[i]``) and received a frame other than
a PROBE (a returning PROBE must not cancel the next one, or a link that only sends
would be probed every other interval and miss every other one). A link
loaded both ways therefore carries no PROBE at all; a link idle in either direction
is probed once per interval, as every link is with ``idle_only=False``.

* A healthy link leaves the healthy set after ``miss_limit`` (K) consecutive
  missed intervals, or when ``link_up[i]`` falls. Bound: ``healthy`` falls 1 clock
  after ``link_up`` falls, and at most (K + 1) * ``interval`` clocks after the last
  frame received on the link (proved: sim/formal/link_monitor.py). When the
  traffic of a link loaded both ways stops, its first PROBE goes out one interval
  later, so a live link misses one interval then: keep K >= 2 (default 3).
* An unhealthy link rejoins after ``rejoin`` (M) consecutive intervals with a
  frame received while ``link_up`` is high.
* At reset every link is unhealthy and rejoins after M good intervals.

What a frame arriving on link i proves is the far end's transmit direction. The
transmit direction of a link loaded both ways is not tested by a PROBE (none is
sent); a failure of one direction alone is the PCS's to report (remote fault, which
drops ``link_up``). In the leaf each PROBE is addressed to the leaf itself, so the
spine returns it down the same link and one PROBE tests both directions of an idle
link.

Interface
---------
* ``m_probe_0 .. m_probe_{L-1}`` (out, AXI-Stream): 60-byte PROBE frames: DA
  01:80:C2:00:00:0E (link-local, never forwarded), SA 02:00:00:00:<src_node>,
  EtherType 0x88B5, GSE header ver 1, type PROBE, ``src_node``, ``port`` = link
  index, ``ttl`` 1, ``seq`` = per-link probe counter; zero padding.
  A probe waits (back-pressure) and is not repeated; a link whose probe could not
  leave within an interval simply sends the next one later.
* ``probe_rx`` (in, L bits): one-clock pulse per PROBE received on link i.
* ``rx_frame`` (in, L bits): one-clock pulse per good frame of any kind received on
  link i (a PROBE pulses both inputs in the same clock: it counts once for liveness
  and, with ``probe_rx``, not as traffic).
* ``tx_data`` (in, L bits): one-clock pulse per frame other than this monitor's
  PROBEs sent on link i (held low: a PROBE every interval).
* ``link_up`` (in, L bits): the MAC/PCS link status.
* ``src_node`` (in, 16): this node's id.
* ``healthy`` (out, L bits): registered.
* ``stat_probes_sent_<i>``, ``stat_probes_rcvd_<i>``, ``stat_probes_missed_<i>``
  (intervals with nothing received), ``stat_probes_skipped_<i>`` (PROBEs not sent
  because the link was loaded both ways), ``stat_down_events_<i>`` (out, 32-bit per
  link).

Parameters: ``data_width`` (64), ``links`` L (1..16), ``interval`` (clocks, >= 16),
``miss_limit`` K (>= 1), ``rejoin`` M (>= 1), ``idle_only`` (True).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import CONTROL_FRAME_BYTES, GSE_ETHERTYPE, GSE_VERSION, GSEType, pack_header
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["LinkMonitor", "EXPORTS", "PROBE_DA"]

PROBE_DA = bytes.fromhex("0180C200000E")


class LinkMonitor(wiring.Component):
    def __init__(self, data_width=64, links=4, interval=1024, miss_limit=3, rejoin=2, idle_only=True):
        check_data_width(data_width)
        if not 1 <= links <= 16:
            raise ValueError("links must be 1..16")
        if interval < 16 or miss_limit < 1 or rejoin < 1:
            raise ValueError("interval >= 16, miss_limit >= 1, rejoin >= 1")
        self.data_width, self.links = data_width, links
        self.interval, self.miss_limit, self.rejoin = interval, miss_limit, rejoin
        self.idle_only = bool(idle_only)
        super().__init__(
            {
                "m_probe": Out(AXIStreamSignature(data_width)).array(links),
                "probe_rx": In(links),
                "rx_frame": In(links),
                "tx_data": In(links),
                "link_up": In(links),
                "src_node": In(16),
                "healthy": Out(links),
                "stat_probes_sent": Out(32).array(links),
                "stat_probes_rcvd": Out(32).array(links),
                "stat_probes_missed": Out(32).array(links),
                "stat_probes_skipped": Out(32).array(links),
                "stat_down_events": Out(32).array(links),
            }
        )

    def elaborate(self, platform):
        m = Module()
        L, B = self.links, self.data_width // 8
        nbeats = (CONTROL_FRAME_BYTES + B - 1) // B

        # one shared interval timer: all links tick together
        tmr = Signal(range(self.interval))
        tick = Signal()
        m.d.comb += tick.eq(tmr == self.interval - 1)
        m.d.sync += tmr.eq(Mux(tick, 0, tmr + 1))

        link_up = Signal(L)
        m.d.sync += link_up.eq(self.link_up)
        cbits = max(self.miss_limit, self.rejoin).bit_length() + 1
        for i in range(L):
            # ---- transmit ------------------------------------------------------------
            p = self.m_probe[i]
            pend = Signal(name=f"pend{i}")  # a probe is due
            busy = Signal(name=f"busy{i}")  # a probe is being sent
            beat = Signal(range(nbeats), name=f"beat{i}")
            pseq = Signal(16, name=f"pseq{i}")
            # activity in the interval so far (this clock included): sent data, heard
            seen = Signal(name=f"seen{i}")  # a frame or PROBE arrived in this interval
            sent = Signal(name=f"sent{i}")  # a data frame left in this interval
            got = Signal(name=f"got{i}")  # a frame other than a PROBE arrived in it
            heard = Signal(name=f"heard{i}")
            other = Signal(name=f"other{i}")
            m.d.comb += [
                heard.eq(seen | self.probe_rx[i] | self.rx_frame[i]),
                other.eq(self.rx_frame[i] & ~self.probe_rx[i]),
            ]
            with m.If(tick):
                m.d.sync += [sent.eq(0), got.eq(0)]
            with m.Else():
                with m.If(self.tx_data[i]):
                    m.d.sync += sent.eq(1)
                with m.If(other):
                    m.d.sync += got.eq(1)
            due = Signal(name=f"due{i}")  # the PROBE of the interval starting now is needed
            if self.idle_only:
                # a returning PROBE does not count here: it must not cancel the next one
                m.d.comb += due.eq(~((sent | self.tx_data[i]) & (got | other)))
            else:
                m.d.comb += due.eq(1)
            with m.If(tick):
                with m.If(due):
                    m.d.sync += pend.eq(1)
                with m.Else():
                    m.d.sync += self.stat_probes_skipped[i].eq(self.stat_probes_skipped[i] + 1)
            with m.If(pend & ~busy):
                m.d.sync += [busy.eq(1), pend.eq(0), beat.eq(0)]
            frame = (
                list(PROBE_DA)
                + [0x02, 0x00, 0x00, 0x00, self.src_node[8:16], self.src_node[0:8]]
                + [(GSE_ETHERTYPE >> 8) & 0xFF, GSE_ETHERTYPE & 0xFF]
                + pack_header(
                    {
                        "ver": GSE_VERSION,
                        "type": GSEType.PROBE.value,
                        "src_node": self.src_node,
                        "port": i,
                        "ttl": 1,
                        "seq": pseq,
                    }
                )
            )
            frame += [0] * (nbeats * B - len(frame))
            frame = [Const(b, 8) if isinstance(b, int) else b for b in frame]
            m.d.comb += [p.valid.eq(busy), p.payload.user.eq(0), p.payload.last.eq(beat == nbeats - 1)]
            with m.Switch(beat):
                for k in range(nbeats):
                    with m.Case(k):
                        m.d.comb += p.payload.data.eq(Cat(*frame[k * B : (k + 1) * B]))
                        nvalid = min(B, CONTROL_FRAME_BYTES - k * B)
                        m.d.comb += p.payload.keep.eq((1 << nvalid) - 1)
            with m.If(p.valid & p.ready):
                with m.If(beat == nbeats - 1):
                    m.d.sync += [
                        busy.eq(0),
                        pseq.eq(pseq + 1),
                        self.stat_probes_sent[i].eq(self.stat_probes_sent[i] + 1),
                    ]
                    with m.If(tick & due):
                        m.d.sync += pend.eq(1)
                with m.Else():
                    m.d.sync += beat.eq(beat + 1)

            # ---- receive / health ----------------------------------------------------
            miss = Signal(cbits, name=f"miss{i}")
            good = Signal(cbits, name=f"good{i}")
            h = self.healthy[i]
            with m.If(self.probe_rx[i]):
                m.d.sync += self.stat_probes_rcvd[i].eq(self.stat_probes_rcvd[i] + 1)
            with m.If(tick):
                m.d.sync += seen.eq(0)
                with m.If(heard):
                    m.d.sync += [miss.eq(0), good.eq(Mux(good == self.rejoin, good, good + 1))]
                with m.Else():
                    m.d.sync += [
                        good.eq(0),
                        miss.eq(Mux(miss == self.miss_limit, miss, miss + 1)),
                        self.stat_probes_missed[i].eq(self.stat_probes_missed[i] + 1),
                    ]
            with m.Elif(self.probe_rx[i] | self.rx_frame[i]):
                m.d.sync += seen.eq(1)
            # health decision from the registered counters
            with m.If(h):
                with m.If(~link_up[i] | (miss >= self.miss_limit)):
                    m.d.sync += [h.eq(0), self.stat_down_events[i].eq(self.stat_down_events[i] + 1)]
            with m.Else():
                with m.If(link_up[i] & (good >= self.rejoin)):
                    m.d.sync += h.eq(1)
            with m.If(~link_up[i]):
                m.d.sync += good.eq(0)
        return m


EXPORTS = [
    BlockSpec(
        name="link_monitor",
        module="gse_link_monitor",
        factory=LinkMonitor,
        params={
            "data_width": 64,
            "links": 4,
            "interval": 1024,
            "miss_limit": 3,
            "rejoin": 2,
            "idle_only": True,
        },
        description="Fabric link health: PROBE keep-alives on links not loaded both ways, "
        "any received frame proves liveness; healthy mask after K silent intervals or link "
        "down, rejoin after M good intervals",
    )
]

"""Reference model of the link monitor (rtl/pktc/link_monitor.py), clock by clock, in
plain Python, written from the contract of its docstring and docs/pktc.md:

- one interval timer shared by the links: the intervals are ``interval`` clocks from
  reset, and the last clock of each ends it (the *tick*);
- liveness: a link has *heard* an interval when ``rx_frame`` or ``probe_rx`` pulsed
  in any of its clocks; an interval ended unheard is a miss (``stat_probes_missed``);
- health: ``miss_limit`` (K) consecutive misses, or ``link_up`` low, take a healthy
  link out; ``rejoin`` (M) consecutive heard intervals while ``link_up`` is high bring
  it back; at reset no link is healthy. ``link_up`` is registered, and the decision is
  registered from the registered miss/good counts: ``healthy`` falls 1 clock after the
  registered ``link_up`` falls;
- PROBEs: at each tick a PROBE is due on a link unless (``idle_only``) the link both
  sent data (``tx_data``) and received a frame other than a PROBE (``rx_frame``
  without ``probe_rx``) in the interval just ended; a PROBE not due is counted in
  ``stat_probes_skipped``. A due PROBE waits for the one being sent (it is not
  repeated: a PROBE due while one waits, or while a waiting one starts, merges into
  it); a waiting PROBE starts the clock after it became due or after the one before
  it ended, 60 bytes in ``ceil(60 / B)`` beats under back-pressure, and
  each one taken whole counts in ``stat_probes_sent`` and moves the link's PROBE
  ``seq`` on by one;
- ``stat_probes_rcvd`` counts ``probe_rx`` pulses; ``stat_down_events`` each fall of
  ``healthy``. Synchronous ``rst`` clears everything.

Feed :meth:`LinkMonitorModel.clock` one clock at a time with the inputs the block
samples at that clock's edge; between edges the model's ``healthy``, ``valid(i)`` and
``beat(i)`` are what the block's outputs show. :func:`probe_frame` gives the bytes a
PROBE must carry (the brief's byte table, packed by :func:`opengse.sim.soak.gse_header`).
"""

from dataclasses import dataclass

from .gse_scapy import GSE_ETHERTYPE
from .soak import gse_header

__all__ = ["LinkMonitorModel", "probe_frame", "PROBE_BYTES"]

PROBE_BYTES = 60
_PROBE_DA = bytes.fromhex("0180C200000E")
_PROBE_TYPE = 3


def probe_frame(src_node, link, seq):
    """The 60 bytes of the PROBE link ``link`` sends as its ``seq``-th since reset."""
    head = (
        _PROBE_DA
        + bytes((0x02, 0, 0, 0, (src_node >> 8) & 255, src_node & 255))
        + GSE_ETHERTYPE.to_bytes(2, "big")
        + gse_header(type=_PROBE_TYPE, src_node=src_node, port=link, ttl=1, seq=seq & 0xFFFF)
    )
    return head + bytes(PROBE_BYTES - len(head))


@dataclass
class _Link:
    # liveness in the current interval
    heard: bool = False
    sent_data: bool = False
    got_other: bool = False
    # health
    misses: int = 0  # consecutive, saturating at K
    goods: int = 0  # consecutive heard intervals with link_up, saturating at M
    healthy: bool = False
    # PROBE transmit
    due: bool = False  # a PROBE waits to start
    sending: bool = False
    beat: int = 0
    seq: int = 0
    # counters
    sent: int = 0
    rcvd: int = 0
    missed: int = 0
    skipped: int = 0
    down: int = 0
    merged: int = 0  # due PROBEs folded into one already waiting (not a counter of the block)
    made_due: int = 0  # PROBEs that became due (not a counter of the block)


class LinkMonitorModel:
    def __init__(self, links, interval, miss_limit, rejoin, data_width=64, idle_only=True):
        self.L, self.T, self.K, self.M = links, interval, miss_limit, rejoin
        self.idle_only = idle_only
        self.nbeats = -(-PROBE_BYTES // (data_width // 8))
        self.reset()

    def reset(self):
        self.timer = 0
        self.link_up = 0  # registered
        self.intervals = 0
        self.links = [_Link() for _ in range(self.L)]

    # --- what the outputs show between edges -------------------------------------
    @property
    def healthy(self):
        return sum(int(k.healthy) << i for i, k in enumerate(self.links))

    def valid(self, i):
        return self.links[i].sending

    def beat(self, i):
        return self.links[i].beat

    def pending(self, i):
        """PROBEs of link ``i`` waiting or being sent (for a progress watchdog)."""
        k = self.links[i]
        return int(k.due) + int(k.sending)

    def counters(self, i):
        k = self.links[i]
        return {
            "probes_sent": k.sent,
            "probes_rcvd": k.rcvd,
            "probes_missed": k.missed,
            "probes_skipped": k.skipped,
            "down_events": k.down,
        }

    # --- one clock edge -----------------------------------------------------------
    def clock(self, probe_rx, rx_frame, tx_data, link_up, ready, rst=False):
        """The edge of one clock: ``probe_rx``, ``rx_frame``, ``tx_data``, ``link_up``
        (L-bit ints) and ``ready`` (a list: each ``m_probe`` port's ``tready``) as
        the block samples them; ``rst``: reset at this edge."""
        if rst:
            self.reset()
            return
        tick = self.timer == self.T - 1
        self.timer = 0 if tick else self.timer + 1
        up_r = self.link_up  # the registered link_up the decision uses
        self.link_up = link_up
        if tick:
            self.intervals += 1
        for i, k in enumerate(self.links):
            prx, rxf, txd = (probe_rx >> i) & 1, (rx_frame >> i) & 1, (tx_data >> i) & 1
            other = rxf and not prx
            up = (up_r >> i) & 1
            heard = k.heard or prx or rxf
            loaded = (k.sent_data or txd) and (k.got_other or other)
            # health decision, from the counts before this edge
            if k.healthy:
                if not up or k.misses >= self.K:
                    k.healthy = False
                    k.down += 1
            elif up and k.goods >= self.M:
                k.healthy = True
            # liveness and the counts
            if prx:
                k.rcvd += 1
            if tick:
                k.heard = k.sent_data = k.got_other = False
                if heard:
                    k.misses = 0
                    k.goods = min(k.goods + 1, self.M)
                else:
                    k.goods = 0
                    k.misses = min(k.misses + 1, self.K)
                    k.missed += 1
            else:
                k.heard = heard
                k.sent_data = k.sent_data or bool(txd)
                k.got_other = k.got_other or bool(other)
            if not up:
                k.goods = 0
            # PROBE transmit
            due_now = tick and (not self.idle_only or not loaded)
            if tick and not due_now:
                k.skipped += 1
            if due_now:
                k.made_due += 1
            waiting = k.due
            if k.sending:
                if ready[i]:
                    if k.beat == self.nbeats - 1:
                        k.sending = False
                        k.sent += 1
                        k.seq = (k.seq + 1) & 0xFFFF
                    else:
                        k.beat += 1
            elif waiting:  # the waiting PROBE starts
                k.sending, k.beat, k.due = True, 0, False
            if due_now:
                if waiting:  # it is still waiting, or it starts now: not repeated
                    k.merged += 1
                else:
                    k.due = True

"""The overhead limit: the effective throughput a perfect scheduler could reach.

Host and fabric links run at the same rate (one beat of ``W`` bytes per clock), so
every byte on a link that is not an original frame byte costs throughput: the GSE tag
(18 bytes), the unused bytes of a frame's last beat, and control frames (REQUEST,
GRANT, PROBE: 60 bytes, one ``ceil(60 / W)``-beat frame each).

Two ways to get it:

* :func:`analytic_limit` - from a frame size and a control policy (issue 14 item 7:
  1500 B at 64 bits is 188 beats untagged and 190 tagged; one GRANT per 4 KB
  container, a REQUEST per container, a PROBE every 1024 clocks on every link give
  0.950 at 1500 B and 0.968 at 9000 B; PROBEs only on links without data, the link
  monitor's rule since ``idle_only``, give 0.958 / 0.975).
* :func:`measured_limit` - from what a run actually carried: for each class of links
  (host egress links, leaf-to-spine uplinks, spine-to-leaf downlinks), the clocks it
  was busy and the original bytes it carried in that time. A perfect scheduler keeps
  every link of the class busy with the same mix, so the class could deliver
  ``links x clocks x W x (original bytes / busy beats / W)``; relative to the hosts'
  line capacity that is ``links / hosts x bytes / (busy_beats x W)``. The limit is the
  smallest class's.

PROBEs follow the link monitor's rule (rtl/pktc/link_monitor.py, ``idle_only``): a
link that sent data and received a frame in an interval sends no PROBE in the next,
so a link a perfect scheduler keeps loaded both ways pays none. A run that falls
short of line rate leaves intervals idle, and the PROBEs sent in them are busy beats
of that run only: :func:`measured_limit` takes them out of the busy beats of the
classes that carry data (``probe_beats``), so that the limit stays what a perfect
scheduler could reach on the same links.
"""

import math

__all__ = ["analytic_limit", "measured_limit", "frame_beats", "CONTROL_FRAME_BYTES", "TAG_BYTES"]

TAG_BYTES = 18
CONTROL_FRAME_BYTES = 60


def frame_beats(nbytes, bytes_per_beat=8):
    return -(-nbytes // bytes_per_beat)


def analytic_limit(
    frame_bytes,
    *,
    bytes_per_beat=8,
    container_bytes=4096,
    grants=True,
    requests_per_container=1.0,
    probe_interval=1024,
):
    """Effective-throughput cap of traffic that crosses the fabric, all frames of
    ``frame_bytes``.

    Per original byte, a fabric link carries the tagged frame's beats, one GRANT per
    ``container_bytes`` of data (``grants``) and ``requests_per_container`` REQUESTs
    per container sent (a container is ``max(container_bytes, frame)`` bytes: a frame
    larger than the grant is sent whole, the balance repaid later), and loses
    ``ctl / probe_interval`` of its clocks to PROBEs (``probe_interval`` None: no
    PROBEs on loaded links: the link monitor's ``idle_only`` rule on traffic that loads
    every fabric link both ways). The host link's cap (untagged beats) is applied too."""
    ctl = frame_beats(CONTROL_FRAME_BYTES, bytes_per_beat)
    data = frame_beats(frame_bytes + TAG_BYTES, bytes_per_beat)
    per_frame = data
    if grants:
        per_frame += ctl * frame_bytes / container_bytes
    containers_per_frame = frame_bytes / max(container_bytes, frame_bytes)
    per_frame += ctl * requests_per_container * containers_per_frame
    fabric = frame_bytes / (per_frame * bytes_per_beat)
    if probe_interval:
        fabric *= 1 - ctl / probe_interval
    host = frame_bytes / (frame_beats(frame_bytes, bytes_per_beat) * bytes_per_beat)
    return min(fabric, host)


def measured_limit(classes, hosts, bytes_per_beat=8, probe_beats=None):
    """``classes``: ``{name: (links, busy_beats, original_bytes)}`` over one window;
    ``probe_beats``: ``{name: beats of PROBE frames among that class's busy beats}``
    (left out: a link kept loaded sends none). Returns ``(limit, {name: limit of that
    class})``. A class that carried nothing sets no limit (``math.inf``)."""
    per, probe_beats = {}, probe_beats or {}
    for name, (links, beats, nbytes) in classes.items():
        if nbytes > 0:
            beats -= min(probe_beats.get(name, 0), beats)
        per[name] = math.inf if beats <= 0 else links / hosts * nbytes / (beats * bytes_per_beat)
    finite = [v for v in per.values() if v != math.inf]
    return (min(finite) if finite else math.nan), per

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
* :func:`measured_limit` - from what a run actually carried, counted in frames: for
  each class of links (host egress links, leaf-to-spine uplinks, spine-to-leaf
  downlinks), the data frames and the control frames it carried in the window, and
  the frames and original bytes the checkers took. A perfect scheduler keeps every
  link of the class busy with the same mix, so the class could deliver ``links x W``
  bytes per clock of that mix: relative to the hosts' line capacity, ``links / hosts x
  F / (W x beats the class needs per delivered frame)``, where ``F`` is the mean
  original frame and the beats per delivered frame are the class's share of the
  frames (at most 1: a frame crosses a class once) times the tagged frame's beats,
  plus its control frames' beats per delivered frame. The limit is the smallest
  class's, and never above 1: the host links' class is ``F / (W x ceil(F / W))``.

  Every input is counted at a frame's end, so the figure is exact for one frame size
  whatever the window. The earlier form, original bytes counted at a frame's end over
  beats counted per clock, was off by up to a frame per link at each end of the window
  (1125 beats at 9000 B, about 1 % of a 120 000-clock window at full rate, more at
  lower rates): it read 1.0006 in one 9000 B run, which no scheduler can reach. With
  a mix of sizes the beats of a frame are taken for the mean size, with half a beat
  of rounding (the expected partial last beat of sizes spread over many beats).

PROBEs follow the link monitor's rule (rtl/pktc/link_monitor.py, ``idle_only``): a
link that sent data and received a frame in an interval sends no PROBE in the next,
so a link a perfect scheduler keeps loaded both ways pays none. A run that falls
short of line rate leaves intervals idle, and the PROBEs sent in them are frames of
that run only: :func:`measured_limit` is given the control frames without them
(REQUESTs and GRANTs), so that the limit stays what a perfect scheduler could reach
on the same links.
"""

import math

__all__ = [
    "analytic_limit",
    "measured_limit",
    "frame_beats",
    "frame_beats_of_mean",
    "CONTROL_FRAME_BYTES",
    "TAG_BYTES",
]

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


def frame_beats_of_mean(mean_bytes, bytes_per_beat=8):
    """Beats of a frame of ``mean_bytes`` (a whole number: exactly; otherwise the mean
    of a mix of sizes: ``mean / W`` plus the expected partial last beat ``(W - 1) /
    2W``)."""
    if float(mean_bytes).is_integer():
        return frame_beats(int(mean_bytes), bytes_per_beat)
    return mean_bytes / bytes_per_beat + (bytes_per_beat - 1) / (2 * bytes_per_beat)


def measured_limit(classes, hosts, delivered, bytes_per_beat=8):
    """``classes``: ``{name: (links, data_frames, control_frames, tag_bytes)}`` over one
    window (control frames without the PROBEs a loaded link would not send; tag_bytes:
    what a data frame carries on that class beyond the original frame, 18 on fabric
    links, 0 on host links); ``delivered``: ``(frames, original bytes)`` the checkers
    took in the window. Returns ``(limit, {name: limit of that class})``; a class that
    carried no data frame sets no limit (``math.inf``); nothing delivered: ``nan``."""
    frames, nbytes = delivered
    W = bytes_per_beat
    if frames <= 0 or nbytes <= 0:
        return math.nan, {name: math.nan for name in classes}
    mean = nbytes / frames
    ctl_w = frame_beats(CONTROL_FRAME_BYTES, W)
    per = {}
    for name, (links, data, ctl, tag) in classes.items():
        if data <= 0:
            per[name] = math.inf
            continue
        share = min(1.0, data / frames)  # of the delivered frames, those this class carried
        beats = share * (frame_beats_of_mean(mean + tag, W) + ctl_w * ctl / data)
        per[name] = links / hosts * mean / (W * beats)
    finite = [v for v in per.values() if v != math.inf]
    return (min(1.0, *finite) if finite else math.nan), per

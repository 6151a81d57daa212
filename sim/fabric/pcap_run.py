"""Run frames through the fabric with host streams (``gse sim``).

:func:`build_stream_fabric` builds (or finds in the cache) the
:class:`~.top.FabricTop` of a shape and mode with ``hosts="stream"``: the host ports
are the top's own streams, driven and drained by the C++ main (``sim/fabric/main.cpp``)
from and to binary frame files (:mod:`.pcap_io`), so no Python runs per clock.
:func:`run_frames` writes the run file - the fabric's configuration
(:func:`~.config.fabric_writes`: route tables, destination tables for host MACs
``02:00:00:00:00:nn``), ``hstart``, ``quiet``, one ``hin`` per host with frames and one
``hout`` per host - runs the model and reads back what every host received.
"""

from dataclasses import dataclass
from pathlib import Path

from .config import RunConfig, Writes, fabric_writes
from .measure import Counters
from .runner import build_model, run_model
from .top import FabricTop

__all__ = [
    "build_stream_fabric",
    "run_frames",
    "SimResult",
    "HOST_START_MIN",
    "MAX_FRAME",
    "drop_counters",
    "stream_lines",
]

#: Frames start no earlier than this clock after reset (configuration takes fewer).
HOST_START_MIN = 4096


def _fabric_max_frame():
    """The largest host frame every switch of the fabric carries without loss: the
    leaf's ``max_frame_bytes`` (GSELeaf's default), and the spine's, whose input
    stores' pause headroom is sized for :data:`~opengse.rtl.lib.pause_fifo.MAX_FRAME_BYTES`
    (9000 B and the 18-byte GSE tag): a longer frame could overrun a spine store in ECMP
    mode (counted there, but lost)."""
    import inspect

    from opengse.rtl.header.gse_header import GSE_HEADER_BYTES
    from opengse.rtl.lib.pause_fifo import MAX_FRAME_BYTES
    from opengse.rtl.tops.leaf import GSELeaf

    leaf = inspect.signature(GSELeaf.__init__).parameters["max_frame_bytes"].default
    return min(leaf, MAX_FRAME_BYTES - GSE_HEADER_BYTES)


#: The largest host frame (bytes, DA .. payload) of the fabric: 9000 (the leaves take
#: 9216, the spines' pause headroom 9000 + the tag).
MAX_FRAME = _fabric_max_frame()


def drop_counters(cn):
    """``{counter: value}`` of the non-zero drop counters at the end of a run: every
    ``drop`` counter of the leaves and spines, the reorder buffers' containers skipped as
    lost and the links' lost frames (as :func:`~.measure.measure` counts drops)."""
    last = len(cn.cycles) - 1
    names = (
        cn.match(r"(leaf|spine)\d+\..*drop.*")
        + cn.match(r"leaf\d+\..*stat_lost")
        + cn.match(r"(fab|host)_(up|dn)[\d_]+\.stat_(frames_lost|refused)")
    )
    return {n: cn.at(n, last) for n in names if cn.at(n, last)}


def build_stream_fabric(shape, lb, *, log=None):
    """The cached Verilator model of the fabric of ``shape`` in mode ``lb`` with host
    streams."""

    def make():
        top = FabricTop(shape, lb, hosts="stream")
        return top, top.black_boxes

    extra = {"log": log} if log else {}
    return build_model(f"fabric_stream_{lb}", {**shape.as_dict(), "lb": lb, "hosts": "stream"}, make, **extra)


@dataclass
class SimResult:
    """What a run gave: ``received[n]`` = ``[(first_cycle, last_cycle, flags, bytes)]``
    with cycles counted from ``start`` (the first clock a host may send); ``sent[n]`` =
    ``(frames, bytes, frames_left)``; ``end`` the last clock (from ``start``);
    ``counters`` the fabric's counters at the end (:class:`~.measure.Counters`)."""

    received: dict
    sent: dict
    start: int
    end: int
    counters: object
    cycles_per_second: float
    seconds: float


def run_file_text(model_map, shape, lb, inputs, outputs, *, max_cycles, quiet):
    """The run file: ``inputs`` ``{host: path}``, ``outputs`` ``{host: path}``. Returns
    ``(text, start)``."""
    w = Writes(model_map)
    fabric_writes(w, shape, lb, RunConfig())
    start = max(HOST_START_MIN, w.done_at(lambda name: True) + 16)
    head = (
        f"cycles {start + max_cycles}\nsample {max(1000, min(100_000, max_cycles))}\nreset 16\nprogress 0.5\n"
    )
    return head + stream_lines(inputs, outputs, start, quiet) + w.text(), start


def stream_lines(inputs, outputs, start, quiet):
    """The run-file lines of the host streams (``sim/fabric/main.cpp``): frames of
    ``inputs`` ``{host: path}`` from clock ``start``, arrivals to ``outputs``, the end
    ``quiet`` clocks after the last beat moved."""
    lines = [f"hstart {start}", f"quiet {quiet}"]
    lines += [f"hin {n} {p}" for n, p in sorted(inputs.items())]
    lines += [f"hout {n} {p}" for n, p in sorted(outputs.items())]
    return "\n".join(lines) + "\n"


def run_frames(model, shape, lb, inputs, work_dir, *, max_cycles, quiet, progress=None):
    """Run the frame files ``inputs`` (``{host: path}``) through ``model``; every host's
    arrivals go to ``work_dir/out<n>.bin``. Returns a :class:`SimResult`."""
    from .pcap_io import read_arrivals

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    outputs = {n: (work_dir / f"out{n}.bin").resolve() for n in range(shape.n_hosts)}
    text, start = run_file_text(
        model.address_map,
        shape,
        lb,
        {n: Path(p).resolve() for n, p in inputs.items()},
        outputs,
        max_cycles=max_cycles,
        quiet=quiet,
    )
    out = run_model(model, text, work_dir, progress=progress)
    sent, end = {}, start + max_cycles
    with open(work_dir / "samples.txt") as f:
        for line in f:
            parts = line.split()
            if parts[:1] == ["I"]:
                sent[int(parts[1])] = (int(parts[2]), int(parts[3]), int(parts[4]))
            elif parts[:1] == ["E"]:
                end = int(parts[1])
    received = {}
    for n, p in outputs.items():
        received[n] = [(a - start, b - start, fl, data) for a, b, fl, data in read_arrivals(p)]
    return SimResult(
        received,
        sent,
        start,
        end - start,
        Counters(out, model.address_map),
        out.cycles_per_second,
        out.seconds,
    )

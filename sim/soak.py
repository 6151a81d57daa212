"""Soak harness for cocotb benches: hostile input, a progress watchdog, conservation
and full-return checks (issue 18).

A soak drives a block with many inputs, most of them hostile, and asserts three
things:

- **progress** (:class:`ProgressWatchdog`): while the bench still has work queued on
  a port, that port moves a beat at least every ``limit`` clocks; otherwise the test
  fails with :class:`~opengse.sim.cocotb_util.WaitTimeout` naming the port and what it
  waited for ("no beat accepted on s_axis for 20000 clocks (312 frames still to send)");
- **conservation** (:func:`check_conservation`): delivered + the sum of the drop
  counters == sent, and every counter is exactly what the bench sent of that reason;
- **full return** (:func:`check_full_return`): at the end, the block's free counts
  are back at their full values and its invariant flags are clear, read from its
  status ports.

Input count: :func:`soak_count` — ``OPENGSE_SOAK_N`` when set, else
:data:`DEFAULT_N` (10 000) in the default regression and :data:`SLOW_N` (100 000) in
the tests marked ``slow`` (``make test-slow``). pytest passes the count to the cocotb
module in the same variable (:func:`soak_env`); the cocotb side reads it with
:func:`soak_inputs`.

Hostile frames (:class:`HostileFrames`): frames of 1 byte to 10 kB, every malformed
reason of the GSE header checks alone and combined (ver+type, type+ttl 0, runt+bad,
len+bad), ``tuser`` set on the last beat (bad frame) or only on an earlier beat (not a
bad frame: only the last beat's ``tuser`` counts), ``tkeep == 0`` on a last beat and
non-contiguous ``tkeep`` on a last beat. Each is an :class:`AxiStreamFrame` plus its
*effective* bytes: the bytes the block counts, by the rule every block here uses (a
beat's byte count is the position of its highest set ``tkeep`` bit + 1, so a last
beat with ``tkeep == 0`` adds no byte; docs/voq.md) and the bytes a sink receives
(``tkeep``-0 bytes removed).
"""

import logging
import math
import os
from dataclasses import dataclass, field

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame

from .cocotb_util import WaitTimeout
from .gse_scapy import GSE_ETHERTYPE

__all__ = [
    "SOAK_ENV",
    "DEFAULT_N",
    "SLOW_N",
    "soak_count",
    "soak_env",
    "soak_inputs",
    "quiet_frame_logs",
    "soak_time_limit_ms",
    "gse_header",
    "Hostile",
    "HostileFrames",
    "ProgressWatchdog",
    "check_conservation",
    "check_full_return",
    "assert_quiet",
    "ReasonTally",
]

SOAK_ENV = "OPENGSE_SOAK_N"
#: Inputs per soak in the default regression and under ``-m slow``.
DEFAULT_N = 10_000
SLOW_N = 100_000


def soak_count(slow=False):
    """The number of inputs a soak sends: ``$OPENGSE_SOAK_N`` if set, else
    :data:`SLOW_N` for the ``slow`` variant and :data:`DEFAULT_N` otherwise."""
    text = os.environ.get(SOAK_ENV, "").strip()
    if text:
        try:
            n = int(float(text))
        except ValueError:
            raise ValueError(f"{SOAK_ENV}={text!r} is not a count of inputs") from None
        if n < 1:
            raise ValueError(f"{SOAK_ENV}={text!r}: the count must be at least 1")
        return n
    return SLOW_N if slow else DEFAULT_N


def soak_env(n):
    """``extra_env`` for :func:`opengse.sim.runner.run_cocotb`: the count, to the cocotb side."""
    return {SOAK_ENV: str(int(n))}


def soak_inputs():
    """Inside a cocotb soak: the count of inputs to send (set by :func:`soak_env`).
    Also silences the per-frame log lines of cocotbext-axi (:func:`quiet_frame_logs`)."""
    quiet_frame_logs()
    return soak_count()


def _not_a_frame_line(record):
    return not (record.levelno == logging.INFO and str(record.msg).startswith(("TX frame", "RX frame")))


def quiet_frame_logs():
    """Drop cocotbext-axi's "TX frame: ..." / "RX frame: ..." INFO lines (one per frame,
    the whole frame printed: a 1e5 soak wrote hundreds of MB of ``sim.log`` with them).
    A filter on the handlers of the root and ``cocotb`` loggers, so the record is never
    formatted; every other line is kept."""
    for logger in (logging.getLogger(), logging.getLogger("cocotb")):
        for handler in logger.handlers:
            if _not_a_frame_line not in handler.filters:
                handler.addFilter(_not_a_frame_line)


def soak_time_limit_ms(n, clocks_per_input, floor_ms=50.0):
    """A simulated-time limit for a soak of ``n`` inputs that each take about
    ``clocks_per_input`` clocks of 10 ns, with a 4x margin, in whole milliseconds:
    cocotb refuses a limit it cannot hold in picoseconds exactly (1e5 x 60 clocks gave
    240.00000000000003 ms in floats, and the VOQ's 1e5 soak failed before its first
    clock)."""
    ns = math.ceil(n * clocks_per_input * 4 * 10)
    return float(max(floor_ms, -(-ns // 1_000_000)))


@dataclass
class Hostile:
    """One hostile (or good) frame: what to send and what it is.

    ``frame``: the :class:`AxiStreamFrame` to send (``tkeep`` and ``tuser`` per byte);
    ``counted``: the bytes the block counts (its effective length: the highest set
    ``tkeep`` bit rule); ``seen``: the bytes a sink receives of them (``tkeep``-0
    bytes removed); ``bad``: ``tuser`` set on the last beat; ``label``: what the
    generator made (a reason, or reasons joined with ``+``)."""

    frame: AxiStreamFrame
    counted: bytes
    seen: bytes
    bad: bool
    label: str
    keep_odd: bool = False


def gse_header(
    ver=1,
    type=0,
    flags=0,
    tc=0,
    tenant=0,
    src_node=0,
    dst_node=0,
    port=0,
    ttl=64,
    seq=0,
    len=0,
    dgsq=0,
    next_type=0,
):
    """The 18 bytes of a GSE header, from the brief's byte table (the same as
    ``bytes(gse_scapy.GSE(...))``, checked in tests/header/test_parser_soak.py; built
    here without scapy because a soak makes 1e5 of them)."""
    return bytes(
        ((ver & 15) << 4 | (type & 15), flags & 255, (tc & 7) << 5 | (tenant >> 8) & 15, tenant & 255)
    ) + b"".join(
        v.to_bytes(k, "big")
        for v, k in (
            (src_node, 2),
            (dst_node, 2),
            (port, 1),
            (ttl, 1),
            (seq, 2),
            (len, 2),
            (dgsq, 2),
            (next_type, 2),
        )
    )


def _bytes(rng, n):
    return rng.randbytes(n)


class HostileFrames:
    """Random frames for the blocks that read a GSE (or Ethernet) header, at ``width``
    bytes per beat.

    :meth:`fabric` makes frames as a fabric port sees them (GSE DATA and control
    frames, plain frames, and every malformed reason of the parser: runt, ver, type,
    ttl, len, bad, and their combinations); :meth:`host` makes frames as a host port
    sees them (plain frames, spoofed GSE EtherType, runts, bad). ``hostile`` is the
    share of frames with at least one fault. Sizes run from 1 byte to ``max_size``
    (10 kB), mostly short (60 to 160 bytes, runts 1 to 31) so that a soak of 1e4
    frames stays short; one in ``big_every`` is 1500 bytes to ``max_size``."""

    def __init__(self, rng, width, hostile=0.7, max_size=10_000, big_every=500, ethertype=GSE_ETHERTYPE):
        self.rng = rng
        self.width = width
        self.hostile = hostile
        self.max_size = max_size
        self.big_every = big_every
        self.ethertype = ethertype
        self.made = {}
        self.count = 0

    # --- sizes, fields -------------------------------------------------------
    def size(self, low=60, high=160):
        return self.rng.randint(low, max(low, high))

    def _big_turn(self):
        self.count += 1
        return self.count % self.big_every == 0

    def gse_fields(self, **over):
        r = self.rng
        f = {
            "type": r.choice((0, 0, 0, 1, 2, 3)),
            "flags": r.randrange(256),
            "tc": r.randrange(8),
            "tenant": r.randrange(4096),
            "src_node": r.randrange(65536),
            "dst_node": r.randrange(65536),
            "port": r.randrange(256),
            "ttl": r.randrange(1, 256),
            "seq": r.randrange(65536),
            "dgsq": r.randrange(65536),
        }
        f.update(over)
        return f

    def plain(self, size, ethertype=None):
        r = self.rng
        et = ethertype if ethertype is not None else r.choice((0x0800, 0x86DD, 0x0806, 0x8915))
        head = _bytes(r, 12) + et.to_bytes(2, "big")
        return (head + _bytes(r, max(0, size - 14)))[:size]

    def gse(self, orig_size, **over):
        """A tagged frame: a plain frame of ``orig_size`` bytes (>= 14) with the tag;
        ``len`` is the original size unless given."""
        orig = self.plain(max(14, orig_size))
        fields = self.gse_fields(**over)
        fields.setdefault("len", len(orig))
        fields["next_type"] = int.from_bytes(orig[12:14], "big")
        return orig[:12] + self.ethertype.to_bytes(2, "big") + gse_header(**fields) + orig[14:]

    # --- per-beat shaping ----------------------------------------------------
    def shape(self, raw, label, bad=False, keep=None, tuser_early=False):
        """Wrap ``raw`` as a frame. ``keep``: ``None`` (contiguous), ``"zero"`` (one more
        last beat with ``tkeep == 0``: ``raw`` is padded to whole beats first, the pad
        bytes being kept, so the counted length is ``raw`` + pad) or ``"holes"`` (the
        last beat's ``tkeep`` has holes below its highest set bit)."""
        W, r = self.width, self.rng
        data = bytearray(raw)
        tkeep = [1] * len(data)
        if keep == "zero":
            pad = (-len(data)) % W
            data += _bytes(r, pad + W)
            tkeep += [1] * pad + [0] * W
        elif keep == "holes":
            tail = len(data) % W or W
            if tail >= 2:  # holes need two lanes at least
                start = len(data) - tail
                pattern = [r.randrange(2) for _ in range(tail - 1)] + [1]
                if all(pattern):
                    pattern[r.randrange(tail - 1)] = 0
                tkeep[start:] = pattern
            else:
                keep = None
        n = len(data)
        last_beat = (n - 1) // W * W
        tuser = [0] * n
        if bad:
            for k in range(last_beat, n):
                tuser[k] = 1
        if tuser_early and last_beat > 0:
            tuser[r.randrange(last_beat)] = 1  # a non-last beat only: not a bad frame
        counted = bytes(data[: self._counted_len(tkeep)])
        seen = bytes(b for b, k in zip(data, tkeep) if k)
        self.made[label] = self.made.get(label, 0) + 1
        frame = AxiStreamFrame(bytes(data), tkeep=tkeep, tuser=tuser)
        return Hostile(frame, counted, seen, bad, label, keep_odd=keep is not None)

    def _counted_len(self, tkeep):
        W = self.width
        beats = -(-len(tkeep) // W)
        last = tkeep[(beats - 1) * W :]
        top = max((i + 1 for i, k in enumerate(last) if k), default=0)
        return (beats - 1) * W + top

    # --- frame mixes ---------------------------------------------------------
    def fabric(self):
        """One frame as a fabric port sees it (see the class docstring)."""
        r = self.rng
        big = self._big_turn()
        bad = r.random() < 0.1
        early = r.random() < 0.05
        if big:
            kind = "big"
        elif r.random() >= self.hostile:
            kind = r.choice(("data", "data", "data", "ctl", "plain"))
        else:
            kind = r.choice(
                (
                    "runt_eth",
                    "runt_gse",
                    "ver",
                    "type",
                    "ttl",
                    "len",
                    "ver+type",
                    "type+ttl",
                    "ver+ttl",
                    "runt+bad",
                    "keep_zero",
                    "keep_holes",
                    "tiny",
                )
            )
        if kind == "data":
            return self.shape(
                self.gse(self.size() - 18, type=0), "data" + ("+bad" if bad else ""), bad, None, early
            )
        if kind == "ctl":
            raw = self.gse(42, type=r.randrange(1, 4), len=r.randrange(65536))
            return self.shape(raw, "ctl" + ("+bad" if bad else ""), bad)
        if kind == "plain":
            return self.shape(self.plain(self.size()), "plain" + ("+bad" if bad else ""), bad)
        if kind in ("runt_eth", "tiny"):
            return self.shape(_bytes(r, r.randint(1, 13)), "runt_eth", bad)
        if kind == "runt+bad":
            return self.shape(_bytes(r, r.randint(1, 13)), "runt+bad", True)
        if kind == "runt_gse":
            raw = self.gse(self.size(60, 90) - 18)
            return self.shape(raw[: r.randint(14, 31)], "runt_gse", bad)
        if kind in ("ver", "ver+type", "ver+ttl"):
            over = {}
            if "type" in kind:
                over["type"] = r.randrange(4, 16)
            if "ttl" in kind:
                over["ttl"] = 0
            raw = bytearray(self.gse(self.size(60, 90) - 18, **over))
            raw[14] = (r.choice((0, 2, 3, 7, 15)) << 4) | (raw[14] & 15)
            return self.shape(bytes(raw), kind, bad)
        if kind in ("type", "type+ttl"):
            over = {"type": r.randrange(4, 16)}
            if kind == "type+ttl":
                over["ttl"] = 0
            return self.shape(self.gse(self.size(60, 90) - 18, **over), kind, bad)
        if kind == "ttl":
            return self.shape(self.gse(self.size(60, 90) - 18, ttl=0), "ttl", bad)
        if kind == "len":
            orig = self.size() - 18
            wrong = (orig + r.choice((-1, 1, 7, -46, 1000, 30000))) % 65536
            return self.shape(self.gse(orig, type=0, len=wrong), "len" + ("+bad" if bad else ""), bad)
        if kind in ("keep_zero", "keep_holes"):
            # The last beat's tkeep is odd; the header is in whole earlier beats.
            orig = max(self.size(), 40 + 2 * self.width)
            raw = self.gse(orig, type=r.choice((0, 0, 1, 2, 3)))
            return self.shape(raw, kind, bad, keep=kind[5:])
        # big: 1500 B to max_size, any of good DATA or len error
        orig = r.randint(1500, self.max_size - 18)
        return self.shape(self.gse(orig, type=0), "big", bad)

    def host(self):
        """One frame as a host port sees it: plain frames, spoofs (the GSE EtherType
        already), runts, bad frames, odd ``tkeep``, 1 byte to ``max_size``."""
        r = self.rng
        big = self._big_turn()
        bad = r.random() < 0.1
        if r.random() >= self.hostile and not big:
            return self.shape(self.plain(self.size()), "plain" + ("+bad" if bad else ""), bad)
        kind = r.choice(("spoof", "spoof+bad", "runt", "runt+bad", "keep_zero", "keep_holes", "tuser_early"))
        if big:
            kind = "big"
        if kind.startswith("spoof"):
            return self.shape(self.plain(self.size(60, 90), self.ethertype), kind, kind.endswith("bad"))
        if kind.startswith("runt"):
            return self.shape(_bytes(r, r.randint(1, 13)), kind, kind.endswith("bad"))
        if kind.startswith("keep"):
            return self.shape(self.plain(max(self.size(), 14 + 2 * self.width)), kind, bad, keep=kind[5:])
        if kind == "tuser_early":
            return self.shape(self.plain(max(self.size(), 2 * self.width)), kind, False, None, True)
        return self.shape(self.plain(r.randint(1500, self.max_size)), "big", bad)


class ReasonTally:
    """Counts, by name, of what a bench sent: ``tally.add("drop_ver")``; ``tally[name]``."""

    def __init__(self, names=()):
        self.counts = {n: 0 for n in names}

    def add(self, name, k=1):
        self.counts[name] = self.counts.get(name, 0) + k

    def __getitem__(self, name):
        return self.counts.get(name, 0)

    def table(self):
        return ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))


@dataclass
class _Port:
    name: str
    valid: object
    ready: object
    what: str
    pending: object
    beats: int = 0
    quiet: int = 0


@dataclass
class ProgressWatchdog:
    """Fails a soak whose block stops moving.

    ``watch(name, valid, ready, what, pending)`` adds a port: ``valid``/``ready`` are
    handles (``ready`` may be ``None`` for a port that never waits), ``pending()``
    returns how many items the bench still expects on that port (0: idle, not
    watched). Every clock a port with pending work that moves no beat adds one to its
    quiet count; a beat clears it. After ``limit`` quiet clocks the watchdog raises
    :class:`WaitTimeout`: "no beat WHAT on NAME for LIMIT clocks (P still pending)".
    Start it with :meth:`start`; :meth:`check` re-raises its failure in the test's own
    coroutine (call it at every wait, so a failure is reported even where a task's
    exception would not end the test). ``paused`` (a bool attribute) stops counting,
    e.g. while the bench holds a reset."""

    clk: object
    limit: int = 20_000
    ports: list = field(default_factory=list)
    failure: str = ""
    paused: bool = False

    def watch(self, name, valid, ready, what, pending):
        self.ports.append(_Port(name, valid, ready, what, pending))

    def start(self):
        self._task = cocotb.start_soon(self._run())
        return self

    def beats(self, name):
        return next(p.beats for p in self.ports if p.name == name)

    async def _run(self):
        while True:
            await RisingEdge(self.clk)
            if self.paused:
                for p in self.ports:
                    p.quiet = 0
                continue
            for p in self.ports:
                moved = int(p.valid.value) and (p.ready is None or int(p.ready.value))
                if moved:
                    p.beats += 1
                    p.quiet = 0
                    continue
                left = p.pending()
                if not left:
                    p.quiet = 0
                    continue
                p.quiet += 1
                if p.quiet >= self.limit:
                    self.failure = (
                        f"no beat {p.what} on {p.name} for {self.limit} clocks ({left} still pending)"
                    )
                    raise WaitTimeout(self.failure)

    def check(self):
        if self.failure:
            raise WaitTimeout(self.failure)

    async def wait(self, condition, what, clocks=None):
        """Wait until ``condition()``; fail with the watchdog's message if a port
        stalls, or after ``clocks`` clocks (default: no bound but the watchdog's)."""
        n = 0
        while not condition():
            self.check()
            await RisingEdge(self.clk)
            n += 1
            if clocks is not None and n >= clocks:
                raise WaitTimeout(f"waited {clocks} clocks for {what}")
        self.check()


def check_conservation(sent, delivered, counters, expected, drop_names, what="frames"):
    """Assert ``delivered + sum(counters[d] for d in drop_names) == sent`` and that
    every counter in ``expected`` equals ``counters``. The message lists each counter
    that differs, with what the bench sent of that reason."""
    wrong = {k: (counters.get(k), v) for k, v in expected.items() if counters.get(k) != v}
    drops = sum(counters[d] for d in drop_names)
    msgs = []
    if wrong:
        msgs.append(
            "counters differ (got, sent): " + ", ".join(f"{k} {g} != {e}" for k, (g, e) in wrong.items())
        )
    if delivered + drops != sent:
        msgs.append(f"{what}: delivered {delivered} + dropped {drops} != sent {sent}")
    assert not msgs, "; ".join(msgs)


async def assert_quiet(clk, valids, clocks=200, what="at rest"):
    """Assert that no handle of ``valids`` (``{port: valid handle}``) is high for
    ``clocks`` clocks: once the bench's inputs are done and every expected output was
    taken, the block holds nothing (no part of a frame, no stale entry). The full
    return of a block without free counts; a soak then sends known-good inputs and
    checks they come through as they would after a reset."""
    for k in range(clocks):
        await RisingEdge(clk)
        high = [name for name, valid in valids.items() if int(valid.value)]
        assert not high, f"{what}: {', '.join(high)} valid {k} clocks after the last expected output"


def check_full_return(dut, full=None, clear=(), what="end of run"):
    """Assert the block is back at rest: each ``full`` port (``{port: value}``)
    reads its full value, each ``clear`` port reads 0."""
    bad = []
    for name, value in (full or {}).items():
        got = int(getattr(dut, name).value)
        if got != value:
            bad.append(f"{name} {got} != {value}")
    for name in clear:
        got = int(getattr(dut, name).value)
        if got:
            bad.append(f"{name} = {got}, not 0")
    assert not bad, f"{what}: not back to rest: " + ", ".join(bad)

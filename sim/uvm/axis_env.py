"""Reusable pyuvm environment for AXI-Stream blocks (one stream in, one stream out,
each with an optional valid/ready side channel such as ``s_hdr`` / ``m_hdr``).

Pieces (all configured through one :class:`AxisEnvConfig` in the ConfigDB under the
key ``"axis_cfg"``):

* :class:`AxisItem` — one frame: bytes, the ``tuser`` error flag of its last beat, and
  an optional side-channel dict.
* :class:`AxisSequence` — sends the items of a list or generator, in order, through
  :class:`AxisSequencer` (a plain ``uvm_sequencer``).
* :class:`AxisDriver` — drives items into cocotbext-axi ``AxiStreamSource`` (and the
  side channel into :class:`~opengse.sim.valid_ready.FieldStreamSource`); every item
  it sends is also written to its ``ap`` analysis port (the stimulus the scoreboard's
  model sees).
* :class:`AxisMonitor` — collects frames from ``AxiStreamSink`` (plus one side entry
  per frame from a ``FieldStreamSink``) and writes them to its ``ap``.
* :class:`AxisScoreboard` — ``model(item) -> [expected outputs]``; compares what the
  monitor saw with the expectations in order, counts matches and mismatches, and in
  ``check_phase`` fails on any mismatch or anything left unmatched on either side.
* :class:`AxisEnv` — builds and wires the above; :meth:`AxisEnv.reset` and
  :meth:`AxisEnv.drain` help a test's ``run_phase``.

Random back-pressure: ``p_in`` / ``p_out`` are the per-cycle pause probabilities of
the sources (idle cycles) and sinks (``tready`` low), with cocotbext-axi pause
generators seeded from ``seed``.

Typical test::

    cfg = AxisEnvConfig(dut=cocotb.top, model=my_model, m_side="m_hdr", p_out=0.3)
    ConfigDB().set(None, "*", "axis_cfg", cfg)
    self.env = AxisEnv("env", self)
    ...
    await self.env.reset()
    await AxisSequence("seq", items).start(self.env.seqr)
    await self.env.drain()
"""

import random
from dataclasses import dataclass, field

from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_driver,
    uvm_env,
    uvm_monitor,
    uvm_scoreboard,
    uvm_sequence,
    uvm_sequence_item,
    uvm_sequencer,
    uvm_subscriber,
)

from ..cocotb_util import drain_until, random_pause, recv_within
from ..valid_ready import FieldStreamSink, FieldStreamSource

__all__ = [
    "AxisItem",
    "AxisSequencer",
    "AxisSequence",
    "AxisDriver",
    "AxisMonitor",
    "AxisScoreboard",
    "AxisEnvConfig",
    "AxisEnv",
    "random_pause",
    "CONFIG_KEY",
]

CONFIG_KEY = "axis_cfg"


class AxisItem(uvm_sequence_item):
    """One AXI-Stream frame.

    * ``data``: the frame's bytes (byte 0 in ``tdata[7:0]`` of the first beat).
    * ``error``: ``tuser`` bit 0 on the last beat (frame marked bad).
    * ``side``: dict of side-channel field values sent/received with the frame, or None.
    * ``note``: free-form tag for the test (e.g. the malformation kind); not compared.
    """

    def __init__(self, name="axis_item", data=b"", error=False, side=None, note=None):
        super().__init__(name)
        self.data = bytes(data)
        self.error = bool(error)
        self.side = dict(side) if side is not None else None
        self.note = note

    @classmethod
    def of(cls, value):
        """An item from an ``AxisItem``, ``bytes`` or a ``(data, error[, side])`` tuple."""
        if isinstance(value, AxisItem):
            return value
        if isinstance(value, (bytes, bytearray)):
            return cls(data=value)
        return cls(
            data=value[0],
            error=value[1] if len(value) > 1 else False,
            side=value[2] if len(value) > 2 else None,
        )

    def differences(self, other):
        """Human-readable differences from ``other`` (an expected item); [] if equal.
        Side channels are compared only when ``other.side`` is not None."""
        out = []
        if self.data != other.data:
            first = next(
                (i for i, (a, b) in enumerate(zip(self.data, other.data)) if a != b),
                min(len(self.data), len(other.data)),
            )
            out.append(
                f"data differs (len {len(self.data)} vs expected {len(other.data)}, "
                f"first difference at byte {first})"
            )
        if self.error != other.error:
            out.append(f"error flag {int(self.error)} vs expected {int(other.error)}")
        if other.side is not None:
            got = self.side or {}
            diff = {k: (got.get(k), v) for k, v in other.side.items() if got.get(k) != v}
            extra = set(got) - set(other.side)
            if diff:
                out.append(
                    "side fields (got, expected): "
                    + ", ".join(f"{k}={g!r}/{e!r}" for k, (g, e) in diff.items())
                )
            if extra:
                out.append(f"unexpected side fields {sorted(extra)}")
        return out

    def __eq__(self, other):
        return (
            isinstance(other, AxisItem)
            and not self.differences(other)
            and (self.side is None) == (other.side is None)
        )

    __hash__ = None

    def __str__(self):
        head = self.data[:16].hex()
        return (
            f"AxisItem({len(self.data)} B {head}{'...' if len(self.data) > 16 else ''}, "
            f"error={int(self.error)}, side={self.side}, note={self.note})"
        )


class AxisSequencer(uvm_sequencer):
    """Plain sequencer for :class:`AxisItem`."""


class AxisSequence(uvm_sequence):
    """Sends ``items`` (a list or a generator of :class:`AxisItem`, bytes or tuples),
    in order. Generators are consumed lazily, so a sequence can be endless-ish.
    ``item_type`` (its ``of`` makes an item of each value) is what subclasses for other
    item kinds change."""

    item_type = AxisItem

    def __init__(self, name="axis_seq", items=()):
        super().__init__(name)
        self.items = items
        self.sent = 0

    async def body(self):
        for value in self.items:
            item = self.item_type.of(value)
            await self.start_item(item)
            await self.finish_item(item)
            self.sent += 1


@dataclass
class AxisEnvConfig:
    """Parameters of :class:`AxisEnv`.

    * ``dut``: the cocotb handle; ``clk`` / ``rst``: signal names (active-high reset).
    * ``s_prefix`` / ``m_prefix``: AXI-Stream prefixes (``s_axis``, ``m_axis``).
    * ``s_side`` / ``m_side``: prefix of an input / output valid/ready side channel,
      or None; ``s_side_fields`` / ``m_side_fields``: its field names (None: all
      ``<prefix>_*`` signals found on the DUT).
    * ``model``: callable ``AxisItem -> iterable of expected outputs``
      (:class:`AxisItem`, bytes or ``(data, error[, side])``); [] = dropped.
    * ``p_in`` / ``p_out``: per-cycle pause probability of sources / sinks.
    * ``seed``: seeds the pause generators.
    * ``drain_timeout``: cycles without output after which :meth:`AxisEnv.drain`
      stops waiting for outstanding frames; also how long the monitor waits for the
      side entry of a frame before failing the test.
    * ``drain_idle``: cycles it then waits to catch unexpected extra output.
    """

    dut: object
    model: object
    clk: str = "clk"
    rst: str = "rst"
    s_prefix: str = "s_axis"
    m_prefix: str = "m_axis"
    s_side: str = None
    s_side_fields: tuple = None
    m_side: str = None
    m_side_fields: tuple = None
    p_in: float = 0.0
    p_out: float = 0.0
    seed: int = 1
    drain_timeout: int = 20_000
    drain_idle: int = 100
    extra: dict = field(default_factory=dict)


def _config(component):
    return ConfigDB().get(component, "", CONFIG_KEY)


class AxisDriver(uvm_driver):
    """Pulls items from the sequencer and queues them on the DUT's input stream
    (``tuser`` = ``error`` on the last beat) and, if configured, its side channel.

    Writes each item to ``ap`` as it is queued (the scoreboard's stimulus)."""

    def build_phase(self):
        self.cfg = _config(self)
        self.ap = uvm_analysis_port("ap", self)

    def start_of_simulation_phase(self):
        cfg, dut = self.cfg, self.cfg.dut
        clk, rst = getattr(dut, cfg.clk), getattr(dut, cfg.rst)
        rng = random.Random(cfg.seed * 7919 + 1)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, cfg.s_prefix), clk, rst)
        self.side = None
        if cfg.s_side:
            self.side = FieldStreamSource(dut, cfg.s_side, clk, cfg.s_side_fields)
        if cfg.p_in:
            self.source.set_pause_generator(random_pause(rng, cfg.p_in))
            if self.side:
                self.side.set_pause_generator(random_pause(rng, cfg.p_in))

    async def run_phase(self):
        while True:
            item = await self.seq_item_port.get_next_item()
            n = len(item.data)
            tuser = ([0] * (n - 1) + [1]) if item.error and n else 0
            self.ap.write(item)
            await self.source.send(AxiStreamFrame(item.data, tuser=tuser))
            if self.side is not None:
                self.side.send(item.side or {})
            self.seq_item_port.item_done()

    def idle(self):
        """Nothing queued or in flight on the input side."""
        side_idle = self.side is None or (not self.side.queue and not self.side.valid.value)
        return self.source.idle() and side_idle


class AxisMonitor(uvm_monitor):
    """Receives frames from the DUT's output stream (and, if configured, one side
    entry per frame, in order) and writes :class:`AxisItem` s to ``ap``. Its sinks'
    ``tready`` follows the ``p_out`` pause generators."""

    def build_phase(self):
        self.cfg = _config(self)
        self.ap = uvm_analysis_port("ap", self)
        self.seen = 0

    def start_of_simulation_phase(self):
        cfg, dut = self.cfg, self.cfg.dut
        clk, rst = getattr(dut, cfg.clk), getattr(dut, cfg.rst)
        rng = random.Random(cfg.seed * 104729 + 2)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, cfg.m_prefix), clk, rst)
        self.side = None
        if cfg.m_side:
            self.side = FieldStreamSink(dut, cfg.m_side, clk, cfg.m_side_fields)
        if cfg.p_out:
            self.sink.set_pause_generator(random_pause(rng, cfg.p_out))
            if self.side:
                self.side.set_pause_generator(random_pause(rng, cfg.p_out))

    async def run_phase(self):
        while True:
            frame = await self.sink.recv()
            side = None
            if self.side is not None:  # bounded: a frame without its entry fails here
                side = await recv_within(
                    self.side,
                    f"the side entry of output frame {self.seen + 1}",
                    clocks=self.cfg.drain_timeout,
                )
            tuser = frame.tuser
            error = tuser[-1] if isinstance(tuser, list) else int(tuser or 0)
            self.seen += 1
            self.ap.write(AxisItem(f"out{self.seen}", bytes(frame.tdata), bool(error & 1), side))

    def check_phase(self):
        left = self.sink.count()
        side_left = self.side.count() if self.side is not None else 0
        assert left == 0 and side_left == 0, (
            f"{self.get_full_name()}: {left} frame(s) and {side_left} side entries never paired"
        )


class AxisScoreboard(uvm_scoreboard):
    """In-order comparison of the DUT's output against ``model``.

    ``stim_export`` receives driven items (expectations = ``model(item)``),
    ``out_export`` receives observed items. Counts ``matches`` / ``mismatches``,
    logs the first few differences, and in ``check_phase`` asserts there was no
    mismatch and nothing is left on either side."""

    MAX_REPORTS = 5

    def build_phase(self):
        self.cfg = _config(self)
        self.model = self.cfg.model
        self.stim_export = uvm_subscriber.uvm_AnalysisImp("stim_export", self, self._stimulus)
        self.out_export = uvm_subscriber.uvm_AnalysisImp("out_export", self, self._observed)
        self.expected = []
        self.observed = []
        self.driven = self.matches = self.mismatches = 0
        self.first_mismatch = None  # (for check_phase's message: the log may be long)

    def _stimulus(self, item):
        self.driven += 1
        for out in self.model(item):
            exp = AxisItem.of(out)
            exp.note = exp.note if exp.note is not None else item.note
            self.expected.append(exp)
        self._compare()

    def _observed(self, item):
        self.observed.append(item)
        self._compare()

    def _compare(self):
        while self.expected and self.observed:
            exp, got = self.expected.pop(0), self.observed.pop(0)
            diffs = got.differences(exp)
            if diffs:
                self.mismatches += 1
                msg = (
                    f"mismatch #{self.mismatches} (output {self.matches + self.mismatches}): "
                    f"{'; '.join(diffs)}\n  got      {got}\n  expected {exp}"
                )
                self.first_mismatch = self.first_mismatch or msg
                if self.mismatches <= self.MAX_REPORTS:
                    self.logger.error(msg)
            else:
                self.matches += 1

    def outstanding(self):
        """Expected outputs not yet seen."""
        return len(self.expected)

    def report_phase(self):
        self.logger.info(
            f"driven {self.driven}, matched {self.matches}, mismatched "
            f"{self.mismatches}, expected left {len(self.expected)}, "
            f"unexpected left {len(self.observed)}"
        )

    def check_phase(self):
        assert self.mismatches == 0, (
            f"{self.mismatches} scoreboard mismatch(es); first: {self.first_mismatch}"
        )
        assert not self.expected, (
            f"{len(self.expected)} expected output(s) never arrived; first: {self.expected[0]}"
        )
        assert not self.observed, f"{len(self.observed)} unexpected output(s); first: {self.observed[0]}"
        assert self.matches > 0 or self.driven == 0, "nothing compared"


class AxisEnv(uvm_env):
    """Driver + sequencer on the input, monitor on the output, scoreboard between.

    Reads :class:`AxisEnvConfig` from the ConfigDB (key ``"axis_cfg"``); ``seqr`` is
    the sequencer to start sequences on."""

    def build_phase(self):
        self.cfg = _config(self)
        self.seqr = AxisSequencer("seqr", self)
        self.driver = AxisDriver("driver", self)
        self.monitor = AxisMonitor("monitor", self)
        self.scoreboard = AxisScoreboard("scoreboard", self)

    def connect_phase(self):
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.driver.ap.connect(self.scoreboard.stim_export)
        self.monitor.ap.connect(self.scoreboard.out_export)

    @property
    def clk(self):
        return getattr(self.cfg.dut, self.cfg.clk)

    async def reset(self, cycles=4):
        """Hold the DUT's reset for ``cycles`` clock cycles."""
        rst = getattr(self.cfg.dut, self.cfg.rst)
        rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.clk)
        rst.value = 0
        await RisingEdge(self.clk)

    async def drain(self):
        """Wait until the input side is idle and every expected output has arrived —
        giving up after ``drain_timeout`` cycles with no new output (a hang; the
        missing frames then fail ``check_phase``) — then ``drain_idle`` more cycles so
        that unexpected extra output shows up in ``check_phase`` too."""
        await drain_until(
            self.clk,
            lambda: self.driver.idle() and not self.scoreboard.outstanding(),
            lambda: self.monitor.seen,
            self.cfg.drain_timeout,
            self.cfg.drain_idle,
            lambda quiet: self.logger.warning(
                f"no output for {quiet} cycles with {self.scoreboard.outstanding()} outputs outstanding"
            ),
        )

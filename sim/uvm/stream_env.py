"""Reusable pyuvm environment for valid/ready streams with struct payloads.

The ports a ``stream.Signature`` member with a struct payload exports as
(``<prefix>_valid``, ``<prefix>_ready``, one ``<prefix>_<field>`` per field), any
number of them in and out, e.g. the grant arbiter's ``s_req``, ``s_arr`` (in) and
``m_grant`` (out). Everything is configured by one :class:`StreamEnvConfig` in the
ConfigDB under the key ``"stream_cfg"``; each port is a :class:`StreamPort`.

Pieces:

* :class:`StreamItem` — one transfer: a dict of field values, the port it belongs
  to, and (when a monitor saw it) the clock cycle, the simulation time and the
  values of extra plain signals sampled with it (``StreamPort.sample``).
* :class:`StreamSequence` sends a list/generator of items (or dicts) in order;
  :class:`StreamQueueSequence` is fed at run time by :meth:`~StreamQueueSequence.put`
  (closed-loop stimulus: a test reacts to what it observes) until
  :meth:`~StreamQueueSequence.close`.
* Per input port an active :class:`StreamAgent`: :class:`StreamSequencer`,
  :class:`StreamDriver` (queues items into
  :class:`~opengse.sim.valid_ready.FieldStreamSource`, random idle cycles with
  probability ``StreamPort.pause``) and a :class:`StreamMonitor`.
* Per output port a :class:`StreamAgent` with a :class:`StreamResponder` (a
  :class:`~opengse.sim.valid_ready.FieldStreamSink` whose ``ready`` is low with
  probability ``pause``: random back-pressure) and a :class:`StreamMonitor`.
* :class:`StreamMonitor` is passive and the same for both directions: it writes every
  handshake (valid and ready high at a rising edge) to its ``ap``. Inputs are seen
  when the DUT takes them, not when the test queues them.
* :class:`StreamScoreboard` receives every monitor's items and hands them to the
  reference model *in cycle order*, within a cycle outputs before inputs (an output
  at edge *t* cannot depend on an input taken at the same edge), so the model sees a
  causal history. The model is either a plain callable ``input item -> expected
  output items`` (compared in order, per output port, on the fields the expectation
  names) or a :class:`StreamModel` with hooks ``on_input`` (same, may return []),
  ``on_output`` (its own checks: returns error strings) and ``on_end``. In
  ``check_phase`` it fails on any mismatch or model error, on expectations never met,
  on unexpected outputs of predicted ports, and if a driver still holds items.
* :class:`StreamEnv` builds and connects all of it; :meth:`StreamEnv.reset`,
  :meth:`StreamEnv.drain`; ``env.seqr("s_req")``, ``env.agent("m_grant").monitor.ap``
  (connect a test's own subscribers there, e.g. a closed-loop responder).

Typical test::

    cfg = StreamEnvConfig(dut=cocotb.top, model=MyModel(),
                          inputs=[StreamPort("s_req", pause=0.3), StreamPort("s_arr")],
                          outputs=[StreamPort("m_grant", pause=0.3, sample=("egress_room",))])
    ConfigDB().set(None, "*", CONFIG_KEY, cfg)
    self.env = StreamEnv("env", self)
    ...
    await self.env.reset()
    await StreamSequence("seq", items).start(self.env.seqr("s_req"))
    await self.env.drain()

Cost: every driver, responder and monitor is a coroutine woken at every clock edge
(like the cocotbext-axi streams it mirrors): a few thousand cycles per second per
handful of ports on Verilator.
"""

import random
import re
from collections import deque
from dataclasses import dataclass, field

from cocotb.triggers import Event, RisingEdge
from cocotb.utils import get_sim_time
from pyuvm import (
    ConfigDB,
    uvm_agent,
    uvm_analysis_port,
    uvm_component,
    uvm_driver,
    uvm_env,
    uvm_monitor,
    uvm_scoreboard,
    uvm_sequence,
    uvm_sequence_item,
    uvm_sequencer,
    uvm_subscriber,
)

from ..cocotb_util import drain_until, random_pause, reset_dut
from ..valid_ready import FieldStreamSink, FieldStreamSource
from .axis_env import AxisSequence

__all__ = [
    "StreamItem",
    "StreamPort",
    "StreamEnvConfig",
    "StreamSequencer",
    "StreamSequence",
    "StreamQueueSequence",
    "StreamDriver",
    "StreamResponder",
    "StreamMonitor",
    "StreamAgent",
    "StreamModel",
    "StreamScoreboard",
    "StreamEnv",
    "CONFIG_KEY",
]

CONFIG_KEY = "stream_cfg"


class StreamItem(uvm_sequence_item):
    """One transfer on a valid/ready stream.

    * ``fields``: dict field name -> int (the ``<prefix>_<field>`` ports).
    * ``port``: the stream's prefix (set by monitors; for an expectation: the output
      port it is expected on).
    * ``cycle`` / ``time``: clock cycle (edges since the run phase started) and
      simulation time (steps) of the handshake, set by monitors.
    * ``sampled``: values of the port's ``sample`` signals at the handshake.
    * ``note``: free-form tag for the test; not compared.
    """

    def __init__(self, name="stream_item", fields=None, port=None, note=None):
        super().__init__(name)
        self.fields = dict(fields or {})
        self.port = port
        self.cycle = None
        self.time = None
        self.sampled = {}
        self.note = note

    @classmethod
    def of(cls, value, port=None):
        """An item from a :class:`StreamItem` or a dict of fields."""
        if isinstance(value, StreamItem):
            if value.port is None:
                value.port = port
            return value
        return cls(fields=value, port=port)

    def __getitem__(self, name):
        return self.fields[name]

    def differences(self, expected):
        """Differences from ``expected`` on the fields it names; [] if none."""
        diff = {k: (self.fields.get(k), v) for k, v in expected.fields.items() if self.fields.get(k) != v}
        return [f"{k}={g!r} (expected {e!r})" for k, (g, e) in diff.items()]

    def __eq__(self, other):
        return isinstance(other, StreamItem) and self.port == other.port and self.fields == other.fields

    __hash__ = None

    def __str__(self):
        at = f" @{self.cycle}" if self.cycle is not None else ""
        return f"{self.port}{at} {self.fields}" + (f" [{self.note}]" if self.note else "")


@dataclass
class StreamPort:
    """One valid/ready port of the DUT.

    * ``prefix``: ``s_req`` for ``s_req_valid`` / ``s_req_ready`` / ``s_req_<field>``.
    * ``fields``: field names (None: every ``<prefix>_*`` signal of the DUT).
    * ``pause``: per-cycle probability of an idle cycle (input: ``valid`` held low
      between items) or of back-pressure (output: ``ready`` low).
    * ``sample``: plain DUT signals whose values the monitor records with every
      transfer of this port (``item.sampled``), e.g. ``("egress_room",)``.
    """

    prefix: str
    fields: tuple = None
    pause: float = 0.0
    sample: tuple = ()


@dataclass
class StreamEnvConfig:
    """Parameters of :class:`StreamEnv`.

    * ``dut``: the cocotb handle; ``clk`` / ``rst``: signal names (sync, active high).
    * ``inputs`` / ``outputs``: :class:`StreamPort` s (or prefixes).
    * ``model``: :class:`StreamModel` or a callable ``input item -> expected outputs``
      (:class:`StreamItem` s with ``port`` set, or dicts when there is one output).
    * ``seed``: seeds the pause generators (each port its own stream).
    * ``drain_timeout``: cycles without any transfer after which :meth:`StreamEnv.drain`
      gives up waiting (a hang: what is missing then fails ``check_phase``).
    * ``drain_idle``: cycles :meth:`StreamEnv.drain` waits afterwards, so unexpected
      extra output shows up too.
    """

    dut: object
    model: object = None
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    clk: str = "clk"
    rst: str = "rst"
    seed: int = 1
    drain_timeout: int = 20_000
    drain_idle: int = 100
    extra: dict = field(default_factory=dict)

    def ports(self):
        ins = [p if isinstance(p, StreamPort) else StreamPort(p) for p in self.inputs]
        outs = [p if isinstance(p, StreamPort) else StreamPort(p) for p in self.outputs]
        return ins, outs


def _config(component):
    return ConfigDB().get(component, "", CONFIG_KEY)


def _rng(cfg, port, salt):
    # One pause stream per port and role, stable whatever the other ports are.
    return random.Random(f"{cfg.seed}/{port.prefix}/{salt}")


class StreamSequencer(uvm_sequencer):
    """Plain sequencer for :class:`StreamItem`."""


class StreamSequence(AxisSequence):
    """Sends ``items`` (a list or generator of :class:`StreamItem` or field dicts) in
    order."""

    item_type = StreamItem

    def __init__(self, name="stream_seq", items=()):
        super().__init__(name, items)


class StreamQueueSequence(uvm_sequence):
    """A sequence fed at run time: :meth:`put` queues an item (or field dict), the body
    sends the queued items in order and ends once :meth:`close` was called and the
    queue is empty. Start it with ``cocotb.start_soon(seq.start(seqr))``."""

    def __init__(self, name="stream_queue_seq"):
        super().__init__(name)
        self.queue = deque()
        self._more = Event()
        self.closed = False
        self.sent = 0

    def put(self, value):
        self.queue.append(value)
        self._more.set()

    def close(self):
        self.closed = True
        self._more.set()

    def pending(self):
        return len(self.queue)

    async def body(self):
        while True:
            if not self.queue:
                if self.closed:
                    return
                self._more.clear()
                await self._more.wait()
                continue
            item = StreamItem.of(self.queue.popleft())
            await self.start_item(item)
            await self.finish_item(item)
            self.sent += 1


def _attach(cls, cfg, port, tag):
    """A ``FieldStreamSource``/``FieldStreamSink`` on ``port`` of the DUT, idle or
    back-pressured with probability ``port.pause`` (its own random stream, ``tag``)."""
    end = cls(cfg.dut, port.prefix, getattr(cfg.dut, cfg.clk), port.fields)
    if port.pause:
        end.set_pause_generator(random_pause(_rng(cfg, port, tag), port.pause))
    return end


class StreamDriver(uvm_driver):
    """Drives one input port: items from the sequencer go, in order, into a
    :class:`~opengse.sim.valid_ready.FieldStreamSource` (idle cycles with probability
    ``port.pause`` before each item). ``port`` is set by the agent."""

    port = None

    def build_phase(self):
        self.cfg = _config(self)

    def start_of_simulation_phase(self):
        self.source = _attach(FieldStreamSource, self.cfg, self.port, "drv")

    async def run_phase(self):
        while True:
            item = await self.seq_item_port.get_next_item()
            self.source.send(item.fields)
            self.seq_item_port.item_done()

    def idle(self):
        """Nothing queued and nothing on the wires."""
        return not self.source.queue and not self.source.valid.value

    def pending(self):
        return len(self.source.queue) + int(bool(self.source.valid.value))


class StreamResponder(uvm_component):
    """Drives ``ready`` of one output port through a
    :class:`~opengse.sim.valid_ready.FieldStreamSink` (low with probability
    ``port.pause``). The monitor is the observer: what the sink collects is dropped."""

    port = None

    def build_phase(self):
        self.cfg = _config(self)

    def start_of_simulation_phase(self):
        self.sink = _attach(FieldStreamSink, self.cfg, self.port, "rsp")
        self.sink.queue = deque(maxlen=0)  # the monitor reports transfers


class StreamMonitor(uvm_monitor):
    """Passive: at every rising edge where ``<prefix>_valid`` and ``<prefix>_ready``
    were high, writes a :class:`StreamItem` (fields, cycle, time, ``sample`` values)
    to ``ap``. Values are read right after the edge, as cocotbext-axi does (the
    values the DUT saw). ``port`` is set by the agent."""

    port = None

    def build_phase(self):
        self.cfg = _config(self)
        self.ap = uvm_analysis_port("ap", self)
        self.seen = 0
        self.cycle = 0

    def start_of_simulation_phase(self):
        dut, p = self.cfg.dut, self.port
        self.clk = getattr(dut, self.cfg.clk)
        self.valid = getattr(dut, f"{p.prefix}_valid")
        self.ready = getattr(dut, f"{p.prefix}_ready")
        names = p.fields
        if names is None:
            names = [n[len(p.prefix) + 1 :] for n in dir(dut) if n.startswith(p.prefix + "_")]
            names = [n for n in names if n not in ("valid", "ready")]
        self.fields = {n: getattr(dut, f"{p.prefix}_{n}") for n in names}
        self.samples = {n: getattr(dut, n) for n in p.sample}

    async def run_phase(self):
        valid, ready, clk = self.valid, self.ready, self.clk
        while True:
            await RisingEdge(clk)
            self.cycle += 1
            if valid.value and ready.value:
                self.seen += 1
                item = StreamItem(
                    f"{self.port.prefix}{self.seen}",
                    {n: int(s.value) for n, s in self.fields.items()},
                    self.port.prefix,
                )
                item.cycle, item.time = self.cycle, get_sim_time("step")
                item.sampled = {n: int(s.value) for n, s in self.samples.items()}
                self.ap.write(item)


class StreamAgent(uvm_agent):
    """One port: input (sequencer + driver + monitor) or output (responder +
    monitor). The env sets ``port`` and ``is_input`` before the build phase."""

    port = None
    is_input = True

    def build_phase(self):
        self.monitor = StreamMonitor("monitor", self)
        self.monitor.port = self.port
        if self.is_input:
            self.seqr = StreamSequencer("seqr", self)
            self.driver = StreamDriver("driver", self)
            self.driver.port = self.port
        else:
            self.seqr = self.driver = None
            self.responder = StreamResponder("responder", self)
            self.responder.port = self.port

    def connect_phase(self):
        if self.is_input:
            self.driver.seq_item_port.connect(self.seqr.seq_item_export)


class StreamModel:
    """Reference-model hooks of :class:`StreamScoreboard` (override what you need).

    * ``on_input(item)``: an input the DUT took; return the outputs it causes
      (:class:`StreamItem` s with ``port`` set; compared in order on their fields).
    * ``on_output(item)``: an output the DUT produced; return error strings. Outputs
      of ports in ``predicted`` are also compared with the expectations.
    * ``on_end()``: at ``check_phase``; return error strings (e.g. left-over state).
    """

    predicted = ()

    def on_input(self, item):
        return ()

    def on_output(self, item):
        return ()

    def on_end(self):
        return ()


class _Predictor(StreamModel):
    # A plain callable as the model: it predicts every output port.
    def __init__(self, fn, outputs):
        self.fn = fn
        self.predicted = tuple(outputs)

    def on_input(self, item):
        return self.fn(item)


class StreamScoreboard(uvm_scoreboard):
    """Feeds the model with every monitored transfer in cycle order (outputs before
    inputs within a cycle), compares predicted outputs in order per port, collects
    the model's errors; ``check_phase`` fails on any problem."""

    MAX_REPORTS = 8

    def build_phase(self):
        self.cfg = _config(self)
        ins, outs = self.cfg.ports()
        self.inputs = {p.prefix for p in ins}
        self.order = {p.prefix: i for i, p in enumerate(outs + ins)}  # outputs first
        model = self.cfg.model
        if model is None:
            model = StreamModel()
        elif not isinstance(model, StreamModel):
            model = _Predictor(model, [p.prefix for p in outs])
        self.model = model
        self.default_port = outs[0].prefix if len(outs) == 1 else None
        self.analysis_export = uvm_subscriber.uvm_AnalysisImp("analysis_export", self, self._seen)
        self.pending = []  # transfers of the current cycle, not yet applied
        self.expected = {p.prefix: deque() for p in outs}
        self.observed = {p.prefix: deque() for p in outs}
        self.counts = {p: 0 for p in self.order}
        self.matches = self.mismatches = 0
        self.errors = []

    def _seen(self, item):
        if self.pending and item.time != self.pending[0].time:
            self.flush()
        self.pending.append(item)

    def flush(self, force=False):
        """Apply the transfers held back (the last cycle's) — unless they are of the
        current time step (other monitors may still report that edge), or ``force``."""
        if not self.pending or (not force and self.pending[0].time == get_sim_time("step")):
            return
        batch, self.pending = sorted(self.pending, key=lambda i: self.order[i.port]), []
        for item in batch:
            self.counts[item.port] += 1
            if item.port in self.inputs:
                for exp in self.model.on_input(item) or ():
                    exp = StreamItem.of(exp, self.default_port)
                    self.expected[exp.port].append(exp)
                    self._compare(exp.port)
            else:
                for err in self.model.on_output(item) or ():
                    self.error(f"{item}: {err}")
                if item.port in self.model.predicted:
                    self.observed[item.port].append(item)
                    self._compare(item.port)

    def error(self, msg):
        self.errors.append(msg)
        if len(self.errors) <= self.MAX_REPORTS:
            self.logger.error(msg)

    def _compare(self, port):
        exp_q, got_q = self.expected[port], self.observed[port]
        while exp_q and got_q:
            exp, got = exp_q.popleft(), got_q.popleft()
            diffs = got.differences(exp)
            if diffs:
                self.mismatches += 1
                self.error(f"mismatch on {port}: {'; '.join(diffs)}\n  got      {got}\n  expected {exp}")
            else:
                self.matches += 1

    def outstanding(self):
        """Expected outputs not yet seen."""
        return sum(len(q) for q in self.expected.values())

    def report_phase(self):
        self.flush(force=True)
        self.logger.info(
            f"transfers {self.counts}; matched {self.matches}, mismatched "
            f"{self.mismatches}, model errors {len(self.errors) - self.mismatches}, "
            f"expected left {self.outstanding()}"
        )

    def check_phase(self):
        self.flush(force=True)
        for err in self.model.on_end() or ():
            self.error(f"at end: {err}")
        if self.errors:
            kinds = {}
            for e in self.errors:  # group by message text without numbers
                k = re.sub(r"\d+", "#", e.split("}: ", 1)[-1])[:120]
                kinds[k] = kinds.get(k, 0) + 1
            self.logger.error(
                "scoreboard errors by kind:\n  "
                + "\n  ".join(f"{n} x {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
            )
        assert not self.errors, f"{len(self.errors)} scoreboard error(s); first: {self.errors[0]}"
        for port, q in self.expected.items():
            assert not q, f"{len(q)} expected output(s) on {port} never came; first: {q[0]}"
        for port, q in self.observed.items():
            assert not q, f"{len(q)} unexpected output(s) on {port}; first: {q[0]}"


class StreamEnv(uvm_env):
    """One :class:`StreamAgent` per port of :class:`StreamEnvConfig` and a
    :class:`StreamScoreboard` fed by all their monitors."""

    def build_phase(self):
        self.cfg = _config(self)
        ins, outs = self.cfg.ports()
        self.agents = {}
        for port, is_input in [(p, True) for p in ins] + [(p, False) for p in outs]:
            agent = StreamAgent(f"{port.prefix}_agent", self)
            agent.port, agent.is_input = port, is_input
            self.agents[port.prefix] = agent
        self.scoreboard = StreamScoreboard("scoreboard", self)

    def connect_phase(self):
        for agent in self.agents.values():
            agent.monitor.ap.connect(self.scoreboard.analysis_export)

    def agent(self, prefix):
        return self.agents[prefix]

    def check_phase(self):
        # The env ends empty: nothing left in a driver (the scoreboard checks the rest).
        for a in self.agents.values():
            if a.is_input:
                assert a.driver.idle(), (
                    f"{a.port.prefix}: {a.driver.pending()} item(s) never taken by the DUT"
                )

    def seqr(self, prefix):
        """The sequencer of input port ``prefix``."""
        return self.agents[prefix].seqr

    @property
    def clk(self):
        return getattr(self.cfg.dut, self.cfg.clk)

    async def reset(self, cycles=4):
        """Hold the DUT's reset for ``cycles`` clocks, then one idle clock."""
        await reset_dut(self.cfg.dut, cycles, self.cfg.clk, self.cfg.rst)

    def inputs_idle(self):
        return all(a.driver.idle() for a in self.agents.values() if a.is_input)

    def transfers(self):
        return sum(a.monitor.seen for a in self.agents.values())

    async def drain(self, done=None):
        """Wait until every input driver is idle, every predicted output has come and
        ``done()`` (if given) is true — giving up after ``drain_timeout`` cycles with
        no transfer on any port — then ``drain_idle`` more cycles."""

        def finished():
            self.scoreboard.flush()
            return self.inputs_idle() and not self.scoreboard.outstanding() and (done is None or done())

        await drain_until(
            self.clk,
            finished,
            self.transfers,
            self.cfg.drain_timeout,
            self.cfg.drain_idle,
            lambda quiet: self.logger.warning(
                f"no transfer for {quiet} cycles; {self.scoreboard.outstanding()} outputs outstanding"
            ),
        )
        self.scoreboard.flush()

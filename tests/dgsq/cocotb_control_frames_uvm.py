"""pyuvm tests of the REQUEST/GRANT control-frame encoder (``gse_ctl_encoder``) and
decoder (``gse_ctl_decoder``), built from :mod:`opengse.sim.uvm.stream_env` (the
``s_ctl`` / ``m_ctl`` field streams) and :mod:`opengse.sim.uvm.axis_env` (the
``m_axis`` / ``s_axis`` frames). The reference is the scapy ``GSE`` layer
(:mod:`opengse.sim.gse_scapy`, written from the brief independently of the RTL).

The same module serves both blocks: it looks at the DUT's ports, and the tests of the
other block are skipped.

* Encoder (:class:`EncoderEnv`): random REQUEST/GRANT header fields go in on
  ``s_ctl`` (:class:`~opengse.sim.uvm.stream_env.StreamDriver`, random idle cycles);
  the ``s_ctl`` :class:`~opengse.sim.uvm.stream_env.StreamMonitor` reports what the
  DUT *took*; the :class:`~opengse.sim.uvm.axis_env.AxisMonitor` on ``m_axis``
  (random ``tready`` low) reports frames. The scoreboard expects, for every header
  taken, exactly :func:`~opengse.sim.gse_scapy.control_frame` with the test's
  ``mac_da`` / ``mac_sa``, in order; ``stat_frames`` counts them.
* Decoder (:class:`DecoderEnv`): frames go in on ``s_axis``
  (:class:`~opengse.sim.uvm.axis_env.AxisDriver`, random idle cycles inside and
  between frames): good REQUEST/GRANT frames (60 bytes, unpadded down to 32 bytes,
  longer), and everything the decoder must reject, as in ``cocotb_control_frames.py``
  plus runts shorter than an Ethernet header (no EtherType: not GSE, counted as
  ``other``); the ``m_ctl``
  :class:`~opengse.sim.uvm.stream_env.StreamResponder` back-pressures at random and
  its monitor reports the decoded fields. The scoreboard expects the scapy
  dissection of every good frame, nothing for the others, in order; the
  ``stat_ctl`` / ``stat_drop_*`` counters are checked against the reference's
  classification at the end.

Both: traffic in bursts separated by idle gaps (0 to 200 clocks, the DUT goes idle;
the encoder's MAC addresses change in some gaps, once every frame is out);
``check_phase`` fails on any mismatch, any expected item never seen, any extra
output, any input never taken, a counter off, or a frame kind or type never
exercised. Tests: ``EncoderMixed``, ``EncoderFullRate``, ``DecoderMixed``,
``DecoderSlowReader`` (``m_ctl`` ready 15 % of clocks: the input must stall at a
frame's last beat while the previous header waits; checked to happen) and
``DecoderFullRate``. The full-rate variants (no pauses) also check the timing the
RTL documents: the encoder sends frames with no bubble, the decoder never stalls its
input while ``m_ctl`` is ready.

Knobs: ``CTL_UVM_SEED``, ``CTL_UVM_COUNT`` (items per mixed test), and
``CTL_UVM_BREAK`` (can-fail check, comma-separated): ``data`` corrupts the
scoreboard's view of one output (encoder: a bit of the 5th frame's GSE ``seq`` byte;
decoder: the 5th output's ``seq``), ``stat`` expects one more ``stat_frames`` /
``stat_drop_err`` than the reference says, ``accept`` makes the decoder's reference
accept frames with ``ttl`` 0 (the scoreboard must see them missing).
"""

import os
import random

import cocotb
import pyuvm
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from pyuvm import ConfigDB, uvm_env, uvm_test
from scapy.layers.l2 import Ether

from opengse.sim.cocotb_util import drain_until
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE, GSE_TYPES, control_frame
from opengse.sim.runner import test_params
from opengse.sim.traffic import random_tag_fields
from opengse.sim.uvm import axis_env, stream_env
from opengse.sim.uvm.axis_env import (
    AxisDriver,
    AxisEnvConfig,
    AxisItem,
    AxisMonitor,
    AxisScoreboard,
    AxisSequence,
    AxisSequencer,
)
from opengse.sim.uvm.stream_env import StreamEnv, StreamEnvConfig, StreamItem, StreamPort, StreamSequence

FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
KINDS = {1: "REQUEST", 2: "GRANT"}
FRAME_BYTES = 60
BREAK = {b for b in os.environ.get("CTL_UVM_BREAK", "").split(",") if b}
BREAK_AT = 5  # which output the ``data`` corruption hits
SEED = int(os.environ.get("CTL_UVM_SEED", 61))
COUNT = int(os.environ.get("CTL_UVM_COUNT", 1000))

_top = getattr(cocotb, "top", None)
IS_ENCODER = _top is not None and hasattr(_top, "s_ctl_valid")
IS_DECODER = _top is not None and hasattr(_top, "m_ctl_valid")


def random_fields(r, kind=None):
    """Header fields of a REQUEST (type 1) or GRANT (type 2), every field random."""
    return random_tag_fields(r, r.randrange(65536), types=(kind,) if kind else (1, 2), flag_bits=8)


def random_mac(r):
    return ":".join(f"{b:02x}" for b in [r.randrange(256) & 0xFE] + [r.randrange(256) for _ in range(5)])


def reference_frame(fields, da, sa):
    """The reference encoding: scapy ``Ether / GSE`` padded to 60 bytes."""
    f = dict(fields)
    return control_frame(KINDS[f.pop("type")], dst=da, src=sa, **f)


# -- decoder reference --------------------------------------------------------------


def decode_reference(raw, error):
    """``(class, fields)``: what the decoder must do with a frame (scapy dissection).

    class ``ctl`` (fields = the header it must hand out), ``other`` (not GSE, or a
    DATA/PROBE frame), ``malformed`` (GSE shorter than 32 bytes, wrong ``ver``,
    reserved ``type``, ``ttl`` 0), ``err`` (``tuser`` error on the last beat: dropped
    whatever it holds); a frame shorter than the Ethernet header has no EtherType: it
    is not GSE, ``other``."""
    if error:
        return "err", None
    if len(raw) < 14 or Ether(raw[:14]).type != GSE_ETHERTYPE:
        return "other", None
    if len(raw) < 32:
        return "malformed", None
    g = GSE(raw[14:32])
    if g.ver != 1 or int(g.type) not in GSE_TYPES or (g.ttl == 0 and "accept" not in BREAK):
        return "malformed", None
    if KINDS.get(int(g.type)) is None:
        return "other", None
    return "ctl", {k: int(getattr(g, k)) for k in FIELDS}


class DecoderReference:
    """Scoreboard model of the decoder: frame -> [expected ``m_ctl`` item] or [];
    tallies the reference's classification for the counter check."""

    def __init__(self):
        self.counts = dict.fromkeys(("ctl", "other", "malformed", "err"), 0)
        self.kinds = {}  # frame note -> count (coverage)
        self.types = set()  # REQUEST/GRANT types expected out

    def __call__(self, item):
        cls, fields = decode_reference(item.data, item.error)
        self.counts[cls] += 1
        self.kinds[item.note] = self.kinds.get(item.note, 0) + 1
        if cls != "ctl":
            return []
        self.types.add(fields["type"])
        return [StreamItem("exp", fields, "m_ctl", note=item.note)]


class EncoderReference:
    """Scoreboard model of the encoder: header taken on ``s_ctl`` -> [its frame]."""

    def __init__(self, da, sa):
        self.da, self.sa = da, sa
        self.types = set()

    def __call__(self, item):
        self.types.add(item["type"])
        return [AxisItem("exp", reference_frame(item.fields, self.da, self.sa), note=KINDS.get(item["type"]))]


# -- environment ----------------------------------------------------------------------


class CtlScoreboard(AxisScoreboard):
    """:class:`~opengse.sim.uvm.axis_env.AxisScoreboard` (in-order comparison, fails
    in ``check_phase`` on a mismatch or anything left over) whose expectations may be
    field-stream items too (the decoder's ``m_ctl``). ``CTL_UVM_BREAK=data``
    corrupts its view of output number ``BREAK_AT``."""

    def build_phase(self):
        super().build_phase()
        self.seen = 0

    def _stimulus(self, item):
        self.driven += 1
        for exp in self.model(item):
            if not isinstance(exp, (AxisItem, StreamItem)):
                exp = AxisItem.of(exp)
            if exp.note is None:
                exp.note = item.note
            self.expected.append(exp)
        self._compare()

    def _observed(self, item):
        self.seen += 1
        if "data" in BREAK and self.seen == BREAK_AT:
            item = corrupted(item)
        super()._observed(item)


def corrupted(item):
    """A copy of ``item`` with one wrong bit (the can-fail check)."""
    if isinstance(item, StreamItem):
        bad = StreamItem(item.get_name(), item.fields, item.port, item.note)
        bad.fields["seq"] ^= 1
        bad.cycle, bad.time = item.cycle, item.time
        return bad
    data = bytearray(item.data)
    data[14 + 10] ^= 1  # GSE seq, high byte
    return AxisItem(item.get_name(), bytes(data), item.error, item.side, item.note)


class CtlEnvBase(uvm_env):
    """Shared by both directions: the field-stream side is a
    :class:`~opengse.sim.uvm.stream_env.StreamEnv` (``fields``), the frame side an
    axis_env driver or monitor, and a :class:`CtlScoreboard` between them."""

    def build_phase(self):
        self.scfg = ConfigDB().get(self, "", stream_env.CONFIG_KEY)
        self.acfg = ConfigDB().get(self, "", axis_env.CONFIG_KEY)
        self.fields = StreamEnv("fields", self)
        self.scoreboard = CtlScoreboard("scoreboard", self)

    @property
    def clk(self):
        return self.scfg.dut.clk

    async def reset(self):
        await self.fields.reset()

    async def wait_inputs_idle(self):
        while not self.inputs_idle():
            await RisingEdge(self.clk)

    async def drain(self):
        """Wait until the inputs are idle and every expected output came (giving up
        after ``drain_timeout`` clocks without output: what is missing then fails
        ``check_phase``), then ``drain_idle`` clocks so extra output shows up too."""
        await drain_until(
            self.clk,
            lambda: self.inputs_idle() and not self.scoreboard.outstanding(),
            lambda: self.scoreboard.seen,
            self.acfg.drain_timeout,
            self.acfg.drain_idle,
            lambda quiet: self.logger.warning(
                f"no output for {quiet} clocks, {self.scoreboard.outstanding()} outstanding"
            ),
        )


class EncoderEnv(CtlEnvBase):
    """``s_ctl`` input agent (sequencer, driver, monitor) from the StreamEnv, an
    AxisMonitor on ``m_axis``; the scoreboard compares frames with the model of the
    headers the DUT took."""

    def build_phase(self):
        super().build_phase()
        self.frames = AxisMonitor("frames", self)

    def connect_phase(self):
        self.fields.agent("s_ctl").monitor.ap.connect(self.scoreboard.stim_export)
        self.frames.ap.connect(self.scoreboard.out_export)

    @property
    def seqr(self):
        return self.fields.seqr("s_ctl")

    def inputs_idle(self):
        return self.fields.inputs_idle()


class DecoderEnv(CtlEnvBase):
    """AxisSequencer + AxisDriver on ``s_axis``, the StreamEnv's ``m_ctl`` output agent
    (responder, monitor); the scoreboard compares decoded fields with the model of the
    frames driven."""

    def build_phase(self):
        super().build_phase()
        self.seqr = AxisSequencer("seqr", self)
        self.driver = AxisDriver("driver", self)

    def connect_phase(self):
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)
        self.driver.ap.connect(self.scoreboard.stim_export)
        self.fields.agent("m_ctl").monitor.ap.connect(self.scoreboard.out_export)

    def inputs_idle(self):
        return self.driver.idle()


class HandshakeWatch:
    """Counts, per clock, a valid/ready pair: transfers, clocks with ``valid`` and not
    ``ready`` (stalls), and clocks without a transfer between the first and the last
    transfer (bubbles)."""

    def __init__(self, dut, prefix):
        axis = "axis" in prefix  # AXI-Stream: tvalid/tready
        self.valid = getattr(dut, f"{prefix}_{'t' * axis}valid")
        self.ready = getattr(dut, f"{prefix}_{'t' * axis}ready")
        self.clk = dut.clk
        self.transfers = self.stalls = 0
        self.first = self.last = None
        self.cycle = 0
        cocotb.start_soon(self._run())

    async def _run(self):
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1
            v, r = int(self.valid.value), int(self.ready.value)
            if v and r:
                self.transfers += 1
                self.first = self.cycle if self.first is None else self.first
                self.last = self.cycle
            elif v:
                self.stalls += 1

    def bubbles(self):
        return 0 if self.first is None else self.last - self.first + 1 - self.transfers


# -- tests --------------------------------------------------------------------------


class CtlTestBase(uvm_test):
    """Traffic in bursts with idle gaps; subclasses set the pauses and the mix."""

    COUNT, P_IN, P_OUT, SEED_OFFSET, FULL_RATE = COUNT, 0.3, 0.4, 0, False
    GAPS = (0, 0, 1, 2, 5, 17, 60, 200)

    def build_phase(self):
        self.params = test_params()
        self.dut = cocotb.top
        self.rng = random.Random(SEED + self.SEED_OFFSET)
        self.configure()

    async def run_phase(self):
        self.raise_objection()
        dut, r = self.dut, self.rng
        self.before_reset()
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        await self.env.reset()
        self.watch = HandshakeWatch(dut, self.WATCH)
        items = self.items()
        k = 0
        while k < len(items):
            n = len(items) - k if self.FULL_RATE else r.randint(1, 40)
            await self.SEQUENCE("burst", items[k : k + n]).start(self.env.seqr)
            k += n
            await self.env.wait_inputs_idle()
            if not self.FULL_RATE:
                for _ in range(r.choice(self.GAPS)):
                    await RisingEdge(dut.clk)
                await self.between_bursts()
        await self.env.drain()
        self.sent = len(items)
        self.stats = {n: int(getattr(dut, n).value) for n in self.COUNTERS}
        self.logger.info(
            f"{self.sent} items, counters {self.stats}, {self.WATCH}: "
            f"{self.watch.transfers} transfers, {self.watch.stalls} stalls, "
            f"{self.watch.bubbles()} bubbles"
        )
        self.drop_objection()

    async def between_bursts(self):
        pass


class EncoderTestBase(CtlTestBase):
    WATCH, COUNTERS, SEQUENCE = "m_axis", ("stat_frames",), StreamSequence

    def configure(self):
        r = self.rng
        self.da, self.sa = random_mac(r), random_mac(r)
        self.model = EncoderReference(self.da, self.sa)
        self.mac_changes = 0
        seed = SEED + self.SEED_OFFSET
        ConfigDB().set(
            None,
            "*",
            stream_env.CONFIG_KEY,
            StreamEnvConfig(dut=self.dut, seed=seed, inputs=[StreamPort("s_ctl", FIELDS, pause=self.P_IN)]),
        )
        ConfigDB().set(
            None,
            "*",
            axis_env.CONFIG_KEY,
            AxisEnvConfig(dut=self.dut, model=self.model, p_out=self.P_OUT, seed=seed),
        )
        self.env = EncoderEnv("env", self)

    def before_reset(self):
        self.dut.s_ctl_valid.value = 0
        self.set_macs()

    def set_macs(self):
        self.model.da, self.model.sa = self.da, self.sa
        self.dut.mac_da.value = int(self.da.replace(":", ""), 16)
        self.dut.mac_sa.value = int(self.sa.replace(":", ""), 16)

    async def between_bursts(self):
        # After the first burst and now and then, new MAC addresses, once every
        # frame is out (they are plain inputs, read while a frame is sent).
        if self.mac_changes == 0 or self.rng.random() < 0.2:
            while self.env.scoreboard.outstanding():
                await RisingEdge(self.dut.clk)
            self.da, self.sa = random_mac(self.rng), random_mac(self.rng)
            self.set_macs()
            self.mac_changes += 1

    def items(self):
        r = self.rng
        fixed = [random_fields(r, 1), random_fields(r, 2)]
        fixed[0].update(ttl=1, seq=0, len=0, flags=0, tenant=0, tc=0)  # extremes
        fixed[1].update(
            ttl=255,
            seq=0xFFFF,
            len=0xFFFF,
            flags=0xFF,
            tenant=0xFFF,
            tc=7,
            src_node=0xFFFF,
            dst_node=0xFFFF,
            port=0xFF,
            dgsq=0xFFFF,
        )
        fields = fixed + [random_fields(r) for _ in range(self.COUNT - 2)]
        return [StreamItem("in", f, "s_ctl", note=KINDS[f["type"]]) for f in fields]

    def check_phase(self):
        # After the scoreboard's and monitors' checks (children first).
        want = self.sent + ("stat" in BREAK)
        assert self.stats["stat_frames"] == want, (
            f"counter stat_frames {self.stats['stat_frames']} != expected {want}"
        )
        assert self.env.scoreboard.matches == self.sent, (
            f"{self.env.scoreboard.matches} frames compared, {self.sent} headers sent"
        )
        assert self.model.types == {1, 2}, f"frame types exercised: {self.model.types}"
        beats = -(-FRAME_BYTES // (self.params["data_width"] // 8))
        assert self.watch.transfers == beats * self.sent, (
            f"{self.watch.transfers} beats on m_axis, expected {beats} x {self.sent}"
        )
        if self.FULL_RATE:
            assert self.watch.bubbles() == 0, (
                f"{self.watch.bubbles()} idle clocks between frames at full rate"
            )
        else:
            assert self.mac_changes > 0, "the MAC addresses never changed"


class DecoderTestBase(CtlTestBase):
    WATCH, SEQUENCE = "s_axis", AxisSequence
    COUNTERS = ("stat_ctl", "stat_drop_other", "stat_drop_malformed", "stat_drop_err")
    #: frame kind -> weight (the cases of cocotb_control_frames.py, plus ``trim``,
    #: ``runt``, ``ethertype``)
    MIX = {
        "ok": 10,
        "long": 2,
        "trim": 2,
        "data": 1,
        "probe": 1,
        "ver": 1,
        "type": 1,
        "ttl0": 1,
        "short": 1,
        "runt": 1,
        "ethertype": 1,
        "err": 1,
    }

    def configure(self):
        self.model = DecoderReference()
        seed = SEED + self.SEED_OFFSET
        ConfigDB().set(
            None,
            "*",
            stream_env.CONFIG_KEY,
            StreamEnvConfig(dut=self.dut, seed=seed, outputs=[StreamPort("m_ctl", FIELDS, pause=self.P_OUT)]),
        )
        ConfigDB().set(
            None,
            "*",
            axis_env.CONFIG_KEY,
            AxisEnvConfig(dut=self.dut, model=self.model, p_in=self.P_IN, seed=seed),
        )
        self.env = DecoderEnv("env", self)

    def before_reset(self):
        self.dut.s_axis_tvalid.value = 0

    def frame(self, kind):
        """``(raw, error)`` of a frame of ``kind`` (built from a valid control frame)."""
        r = self.rng
        f = random_fields(r)
        da, sa = random_mac(r), random_mac(r)
        raw = bytearray(reference_frame(f, da, sa))
        error = False
        if kind == "long":
            raw += bytes(r.randrange(256) for _ in range(r.randint(1, 100)))
        elif kind == "trim":  # no padding, down to the bare 32-byte header
            raw = raw[: r.randint(32, FRAME_BYTES - 1)]
        elif kind == "data":
            raw[14] = 0x10
        elif kind == "probe":
            raw[14] = 0x13
        elif kind == "ver":
            raw[14] = (r.choice([0] + list(range(2, 16))) << 4) | f["type"]
        elif kind == "type":
            raw[14] = 0x10 | r.randrange(4, 16)
        elif kind == "ttl0":
            raw[14 + 9] = 0
        elif kind == "short":  # GSE EtherType, header cut short
            raw = raw[: r.randint(14, 31)]
        elif kind == "runt":  # not even an EtherType
            raw = raw[: r.randint(1, 13)]
        elif kind == "ethertype":
            et = r.choice([0x0800, 0x86DD, 0x0806, 0x8100, 0x88B4, 0x88B6, 0xB588, r.randrange(65536)])
            et = et if et != GSE_ETHERTYPE else 0x0800
            raw[12:14] = et.to_bytes(2, "big")
            n = r.choice([14, r.randint(15, 31), len(raw), len(raw) + r.randint(1, 40)])
            raw = (raw + bytes(r.randrange(256) for _ in range(40)))[:n]
        elif kind == "err":
            error = True
            if r.random() < 0.3:
                raw = raw[: r.randint(32, FRAME_BYTES)]
        return bytes(raw), error

    def items(self):
        r = self.rng
        kinds = list(self.MIX)
        weights = [self.MIX[k] for k in kinds]
        out = [AxisItem("in", *self.frame(k), note=k) for k in kinds]  # each kind once
        out += [
            AxisItem("in", *self.frame(k), note=k) for k in r.choices(kinds, weights, k=self.COUNT - len(out))
        ]
        r.shuffle(out)
        return out

    def check_phase(self):
        # After the scoreboard's checks (children first): counters, coverage, timing.
        c, got = self.model.counts, self.stats
        want = {
            "stat_ctl": c["ctl"],
            "stat_drop_other": c["other"],
            "stat_drop_malformed": c["malformed"],
            "stat_drop_err": c["err"],
        }
        if "stat" in BREAK:
            want["stat_drop_err"] += 1
        errs = [
            f"counter {name} {got[name]} != expected {want[name]}" for name in want if got[name] != want[name]
        ]
        assert not errs, "; ".join(errs) + f" (reference classes {c})"
        assert self.env.scoreboard.matches == c["ctl"]
        missing = set(self.MIX) - set(self.model.kinds)
        assert not missing, f"frame kinds never sent: {missing}"
        assert self.model.types == {1, 2}, f"frame types decoded: {self.model.types}"
        if self.FULL_RATE:
            assert self.watch.stalls == 0, (
                f"s_axis stalled {self.watch.stalls} clocks with m_ctl always ready"
            )


@pyuvm.test(skip=not IS_ENCODER)
class EncoderMixed(EncoderTestBase):
    """Random REQUEST/GRANT headers in bursts, idle gaps, random idle cycles on
    ``s_ctl`` and back-pressure on ``m_axis``."""


@pyuvm.test(skip=not IS_ENCODER)
class EncoderFullRate(EncoderTestBase):
    """No pauses anywhere, one burst: back-to-back frames with no bubble."""

    COUNT, P_IN, P_OUT, SEED_OFFSET, FULL_RATE = 60, 0.0, 0.0, 1, True


@pyuvm.test(skip=not IS_DECODER)
class DecoderMixed(DecoderTestBase):
    """Good and bad frames in bursts, idle gaps, random idle cycles on ``s_axis`` and
    back-pressure on ``m_ctl``."""


@pyuvm.test(skip=not IS_DECODER)
class DecoderSlowReader(DecoderTestBase):
    """The same mix with ``m_ctl`` mostly not ready: a decoded header still waits
    when the next frame's last beat comes, so the input must stall there."""

    COUNT, P_IN, P_OUT, SEED_OFFSET = 300, 0.1, 0.85, 2

    def check_phase(self):
        super().check_phase()
        assert self.watch.stalls > 0, "s_axis never stalled"


@pyuvm.test(skip=not IS_DECODER)
class DecoderFullRate(DecoderTestBase):
    """Good frames only (every length from 32 bytes), no pauses: the input never
    stalls while ``m_ctl`` is ready."""

    COUNT, P_IN, P_OUT, SEED_OFFSET, FULL_RATE = 60, 0.0, 0.0, 1, True
    MIX = {"ok": 4, "long": 1, "trim": 1}

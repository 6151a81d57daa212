"""SkidBuffer: a two-entry register slice for any valid/ready stream.

Placed between two blocks, it registers the forward path (``valid`` and ``payload``)
and the backward path (``ready``) of a ``stream.Signature``, so that neither crosses
it as logic: the usual cure for a ``tready`` that runs through several blocks.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .stream import axis_beat_layout, check_data_width

__all__ = ["SkidBuffer", "skid_between", "EXPORTS"]


class SkidBuffer(wiring.Component):
    """Register slice with a skid register: full rate, every output a register.

    Parameters
    ----------
    payload_shape : shape-like
        Shape of the stream's payload (any Amaranth shape: a struct layout for a
        side channel, :func:`~opengse.rtl.lib.stream.axis_beat_layout` for a packet
        stream). Beats are moved whole; nothing in them is looked at.
    sink, source : str
        Names of the two stream members (default ``s`` and ``m``). A packet stream
        passes ``"s_axis"``/``"m_axis"`` so that its exported ports carry the brief's
        AXI4-Stream names.

    Interface
    ---------
    ``<sink>`` : ``In(stream.Signature(payload_shape))``
        Input. ``ready`` is a register: high while the skid register is empty.
    ``<source>`` : ``Out(stream.Signature(payload_shape))``
        Output. ``valid`` and ``payload`` are registers.

    Timing
    ------
    A beat taken at a rising edge is on the output from the next clock (latency 1).
    With the output always ready the slice moves one beat per clock and the skid
    register stays empty. When the output stalls, the one beat already accepted in
    that clock (``ready`` was high) lands in the skid register and ``ready`` drops
    in the next clock; when the output moves again the skid register empties first,
    then ``ready`` rises. So no beat is lost, reordered or duplicated, and a stall
    costs no throughput once it ends. Occupancy is at most two beats.
    """

    def __init__(self, payload_shape, *, sink="s", source="m"):
        if sink == source:
            raise ValueError("SkidBuffer: sink and source need different names")
        self._sink, self._source = sink, source
        self.payload_shape = payload_shape
        sig = stream.Signature(payload_shape)
        super().__init__({sink: In(sig), source: Out(sig)})

    def elaborate(self, platform):
        m = Module()
        s, o = getattr(self, self._sink), getattr(self, self._source)
        skid_valid = Signal()
        skid = Signal(self.payload_shape, name="skid")
        m.d.comb += s.ready.eq(~skid_valid)

        with m.If(~o.valid | o.ready):  # the output register moves or is empty
            with m.If(skid_valid):
                m.d.sync += [o.payload.eq(skid), o.valid.eq(1), skid_valid.eq(0)]
            with m.Elif(s.valid):  # (ready is high: the skid is empty)
                m.d.sync += [o.payload.eq(s.payload), o.valid.eq(1)]
            with m.Else():
                m.d.sync += o.valid.eq(0)
        with m.Elif(s.valid & s.ready):  # output held: the beat skids
            m.d.sync += [skid.eq(s.payload), skid_valid.eq(1)]
        return m


def skid_between(m, name, source, sink):
    """Connect ``source`` (a stream a part sends) to ``sink`` (a stream a part takes,
    each as :func:`amaranth.lib.wiring.connect` takes them) through a
    :class:`SkidBuffer` added as submodule ``name``, so that neither ``valid`` and the
    payload nor ``ready`` run through from one part into the other. One clock of
    latency, full rate. Returns the buffer."""
    shape = source.signature.members["payload"].shape
    sb = m.submodules[name] = SkidBuffer(shape)
    wiring.connect(m, source, sb.s)
    wiring.connect(m, sb.m, sink)
    return sb


def _axis_skid_buffer(data_width=64, user_width=1):
    check_data_width(data_width)
    return SkidBuffer(axis_beat_layout(data_width, user_width), sink="s_axis", source="m_axis")


EXPORTS = [
    BlockSpec(
        name="skid_buffer",
        module="gse_skid_buffer",
        factory=_axis_skid_buffer,
        params={"data_width": 64, "user_width": 1},
        description="two-entry register slice (registered valid, payload and ready) on an "
        "AXI4-Stream; the RTL class takes any stream payload",
    )
]

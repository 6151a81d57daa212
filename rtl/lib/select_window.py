"""select_window: hold a packet's first beats until its PacketDemux select is known."""

from types import SimpleNamespace

from amaranth.hdl import Signal

from .register_fifo import register_fifo

__all__ = ["select_window"]


def select_window(m, s_axis, demux, key_beat, sel_shape, name="win"):
    """Feed ``s_axis`` into ``demux`` (a :class:`~.packet_demux.PacketDemux`) through a
    window of ``key_beat + 2`` registered beats, so that a select made from the packet's
    beat ``key_beat`` is there with its first beat.

    Adds to ``m``: the beat window and a select FIFO of as many entries
    (:func:`~.register_fifo.register_fifo`; a packet has at least one beat in the
    window from its select's push to its pop), ``s_axis.ready`` (a register: low only
    while the window is full) and the beat index of the packet on the input. The caller
    drives ``sel_in`` (the select, from the bytes of beat ``key_beat`` and those it
    kept; pushed as that beat, or a shorter packet's last beat, enters) and
    ``demux.s_sel`` from the FIFO's head ``sel`` / ``sel_valid``; the head is popped as
    ``demux.s_sel`` transfers.

    Returns ``push`` (a beat enters), ``idx`` (its index in the packet, saturating at
    ``key_beat + 1``), ``sel_in``, ``sel`` and ``sel_valid``.

    Timing: one beat per clock, no idle clock between packets while the outputs are
    ready; latency ``key_beat + 2`` clocks (the window, then the demux's output
    register).
    """
    k, depth = key_beat, key_beat + 2
    push, pop = Signal(name=f"{name}_push"), Signal(name=f"{name}_pop")
    beats, beat_valid = register_fifo(m, name, depth, s_axis.payload.shape(), push, s_axis.payload, pop)
    sel_push, sel_in, sel_pop = Signal(name=f"{name}_sel_push"), Signal(sel_shape), Signal()
    sels, sel_valid = register_fifo(m, f"{name}_sel", depth, sel_shape, sel_push, sel_in, sel_pop)
    idx = Signal(range(k + 2), name=f"{name}_idx")
    m.d.comb += [
        s_axis.ready.eq(~beat_valid[-1] & ~sel_valid[-1]),
        push.eq(s_axis.valid & s_axis.ready),
        demux.s_axis.valid.eq(beat_valid[0]),
        demux.s_axis.payload.eq(beats[0]),
        pop.eq(demux.s_axis.valid & demux.s_axis.ready),
        sel_push.eq(push & ((idx == k) | ((idx < k) & s_axis.payload.last))),
        sel_pop.eq(demux.s_sel.valid & demux.s_sel.ready),
    ]
    with m.If(push):
        with m.If(s_axis.payload.last):
            m.d.sync += idx.eq(0)
        with m.Elif(idx <= k):
            m.d.sync += idx.eq(idx + 1)
    return SimpleNamespace(push=push, idx=idx, sel_in=sel_in, sel=sels[0], sel_valid=sel_valid[0])

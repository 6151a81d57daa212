"""ContainerFraming: joins the DGSQ release path to the sprayer's per-packet descriptor."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import GSE_HEADER_BYTES
from ..interfaces import (
    FIELD_BITS,
    container_release,
    emitted_packet,
    release_report,
    release_request,
    spray_descriptor,
)

__all__ = ["ContainerFraming", "EXPORTS"]


class ContainerFraming(wiring.Component):
    """Releases to the VOQ buffer, and one sprayer descriptor per packet they send.

    A container is what one release of the DGSQ manager sends: whole packets of one
    queue. The VOQ buffer serves releases in order, one at a time, and describes each
    packet it sends (``s_desc``); this block adds what the sprayer needs and the VOQ
    does not know, the destination leaf of the release, from a FIFO of the
    releases still outstanding.

    Parameters
    ----------
    queue_bits, credit_bits : int
        Widths of the queue id and of the release credit (``GSEConfig.queue_bits``,
        ``GSEConfig.credit_bits``).
    ttl : int
        ``ttl`` the sprayer stamps into data packets (1..255).
    depth : int
        Releases outstanding at once (a power of two, >= 2; default 4).

    Interface
    ---------
    ``s_rel`` : ``In(interfaces.container_release(queue_bits, credit_bits))``
        From the DGSQ manager ``m_rel``: ``queue``, ``credit``, ``dst_node``.
    ``m_deq`` : ``Out(interfaces.release_request(queue_bits, credit_bits))``
        To the VOQ buffer ``s_deq``: the release without ``dst_node``, which goes
        into the FIFO in the same handshake.
    ``s_done`` / ``m_done`` : ``interfaces.release_report(queue_bits, credit_bits)``
        The VOQ buffer's report (``m_deq_done``) on its way to the manager
        (``s_rel_done``), passed through unchanged; a report of zero packets tells
        this block that the release sent nothing (an empty release has no packet that
        could carry a ``last``).
    ``s_desc`` : ``In(interfaces.emitted_packet(queue_bits))``
        From the VOQ buffer ``m_desc``: one per packet it sends, in order, valid no
        later than the packet's first beat; ``last`` on a release's last packet.
    ``m_meta`` : ``Out(interfaces.spray_descriptor())``
        To the sprayer ``s_meta``, one per packet: ``dst_node`` of the release,
        ``dgsq`` = ``queue``, ``ttl`` = the parameter, ``len`` = the stored length
        minus the 18 tag bytes (the original frame; 0 for a stored length below 18),
        ``last``.
    ``stat_releases`` : ``Out(32)``
        Releases passed to the VOQ buffer.
    ``stat_empty_releases`` : ``Out(32)``
        Releases that sent no packet (skipped in the FIFO).

    How a descriptor finds its release: the FIFO's head is the release whose
    packets come now. A descriptor of the head's queue is its packet (the manager has
    at most one release per queue out, and issues the next only after the report of
    the previous one, which passes here first); ``last`` retires the head. A head
    that the report says sent nothing, or a descriptor of another queue, means the
    head was an empty release: it is retired without a descriptor, in one clock.

    Back-pressure: with ``depth`` releases outstanding ``s_rel`` is not ready
    (``m_deq`` not valid) until the oldest is retired both by its descriptors and by
    its report: the manager's next release waits (nothing is lost). The VOQ buffer
    takes one release while it emits the previous one and holds up to 4 reports, so
    2 entries keep it busy; 4 leave room for reports the manager has not taken yet.
    A descriptor with no release outstanding (which the VOQ buffer never sends) waits
    for one.

    Timing
    ------
    No register on the data paths: ``m_deq``, ``m_done`` and ``m_meta`` are their
    inputs plus the FIFO's registered head; ``ready`` runs straight back. One
    descriptor per clock, except a clock per empty release retired.
    """

    def __init__(self, queue_bits=6, credit_bits=24, ttl=64, depth=4):
        if not isinstance(queue_bits, int) or not 1 <= queue_bits <= FIELD_BITS["dgsq"]:
            raise ValueError(f"queue_bits must be 1..16, not {queue_bits!r}")
        if not isinstance(credit_bits, int) or credit_bits < 1:
            raise ValueError(f"credit_bits must be a positive integer, not {credit_bits!r}")
        if not 1 <= ttl <= 255:
            raise ValueError(f"ttl must be 1..255 (0 is dropped on arrival), not {ttl!r}")
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        self.queue_bits, self.credit_bits, self.ttl, self.depth = (queue_bits, credit_bits, ttl, depth)
        super().__init__(
            {
                "s_rel": In(container_release(queue_bits, credit_bits)),
                "m_deq": Out(release_request(queue_bits, credit_bits)),
                "s_done": In(release_report(queue_bits, credit_bits)),
                "m_done": Out(release_report(queue_bits, credit_bits)),
                "s_desc": In(emitted_packet(queue_bits)),
                "m_meta": Out(spray_descriptor()),
                "stat_releases": Out(32),
                "stat_empty_releases": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        D = self.depth
        abits = (D - 1).bit_length()
        rel, deq, done, mdone = self.s_rel, self.m_deq, self.s_done, self.m_done
        desc, meta = self.s_desc, self.m_meta

        # The FIFO: entries with three pointers (one wrap bit each): `wp` writes at a
        # release, `dp` is the release whose descriptors come now, `rp` the release
        # whose report comes next. An entry is free when both dp and rp have passed it.
        q_mem = Array(Signal(self.queue_bits, name=f"ent{k}_queue") for k in range(D))
        d_mem = Array(Signal(FIELD_BITS["dst_node"], name=f"ent{k}_dst") for k in range(D))
        e_mem = Array(Signal(name=f"ent{k}_empty") for k in range(D))
        wp, dp, rp = (Signal(abits + 1, name=n) for n in ("wp", "dp", "rp"))
        n_desc = Signal(abits + 1)  # releases not yet retired by descriptors
        n_rep = Signal(abits + 1)  # releases not yet reported
        m.d.comb += [n_desc.eq(wp - dp), n_rep.eq(wp - rp)]
        room = Signal()
        m.d.comb += room.eq(~n_desc[abits] & ~n_rep[abits])  # both < D

        # Releases: straight through, the destination into the FIFO.
        m.d.comb += [
            deq.valid.eq(rel.valid & room),
            rel.ready.eq(deq.ready & room),
            deq.payload.queue.eq(rel.payload.queue),
            deq.payload.credit.eq(rel.payload.credit),
        ]
        with m.If(deq.valid & deq.ready):
            m.d.sync += [
                q_mem[wp[:abits]].eq(rel.payload.queue),
                d_mem[wp[:abits]].eq(rel.payload.dst_node),
                e_mem[wp[:abits]].eq(0),
                wp.eq(wp + 1),
                self.stat_releases.eq(self.stat_releases + 1),
            ]

        # Reports: straight through; the oldest unreported release learns if it was empty.
        m.d.comb += [mdone.valid.eq(done.valid), done.ready.eq(mdone.ready), mdone.payload.eq(done.payload)]
        with m.If(done.valid & done.ready & (n_rep != 0)):
            m.d.sync += [e_mem[rp[:abits]].eq(done.payload.pkts == 0), rp.eq(rp + 1)]
            with m.If(done.payload.pkts == 0):
                m.d.sync += self.stat_empty_releases.eq(self.stat_empty_releases + 1)

        # Descriptors: the head release's destination added.
        head = dp[:abits]
        have_head = n_desc != 0
        reported = n_rep < n_desc  # the head's report has passed
        skip = Signal()
        m.d.comb += skip.eq(
            have_head & ((reported & e_mem[head]) | (desc.valid & (desc.payload.queue != q_mem[head])))
        )
        ln = desc.payload.len
        m.d.comb += [
            meta.valid.eq(desc.valid & have_head & ~skip),
            desc.ready.eq(meta.ready & have_head & ~skip),
            meta.payload.dst_node.eq(d_mem[head]),
            meta.payload.dgsq.eq(desc.payload.queue),
            meta.payload.ttl.eq(self.ttl),
            meta.payload.len.eq(Mux(ln >= GSE_HEADER_BYTES, ln - GSE_HEADER_BYTES, 0)),
            meta.payload.last.eq(desc.payload.last),
        ]
        with m.If(skip | (meta.valid & meta.ready & desc.payload.last)):
            m.d.sync += dp.eq(dp + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="container_framing",
        module="gse_container_framing",
        factory=ContainerFraming,
        params={"queue_bits": 6, "credit_bits": 24, "ttl": 64, "depth": 4},
        description="DGSQ releases to the VOQ buffer, and the sprayer's per-packet "
        "descriptor (destination, DGSQ, ttl, original length, LAST)",
    )
]

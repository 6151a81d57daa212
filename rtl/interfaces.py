"""The records that blocks exchange, defined once.

Every block of the leaf takes its side-channel signatures from here, so that a top
joins them with ``wiring.connect`` and no per-field glue (brief section 2, the GSP
path; docs/walkthrough.md follows one frame along them). Field widths come from
the GSE v1 header (:data:`~opengse.rtl.header.gse_header.GSE_FIELDS`) and from a few
sizes of the leaf, which :class:`~opengse.rtl.config.GSEConfig` holds in one place.

Each function returns a ``stream.Signature`` (valid/ready, one record per transfer)
whose payload is a ``data.StructLayout``; the matching ``*_layout`` function gives the
layout alone. Exported Verilog names the fields ``<port>_<field>``.

The pairs, source → sink:

======================================  ==============================  =====================
record                                   from                             to
======================================  ==============================  =====================
:func:`packet_descriptor` (key, bytes)   host ingress (lookup, tagger)    DGSQ manager ``s_pkt``
:func:`queued_packet` (queue, tenant)    DGSQ manager ``m_pkt``           VOQ buffer ``s_meta``
:func:`container_release`                DGSQ manager ``m_rel``           container framing ``s_rel``
:func:`release_request` (queue, credit)  container framing ``m_deq``      VOQ buffer ``s_deq``
:func:`release_report` (credit used)     VOQ buffer ``m_deq_done``        container framing ``s_done``
:func:`release_report` (unchanged)       container framing ``m_done``     DGSQ manager ``s_rel_done``
:func:`emitted_packet` (len, last)       VOQ buffer ``m_desc``            container framing ``s_desc``
:func:`spray_descriptor`                 container framing ``m_meta``     sprayer ``s_meta``
:func:`control_header`                   manager / framing                control-frame encoder
:func:`control_header`                   control-frame decoder            control demux
:func:`request_record`                   control demux                    grant arbiter ``s_req``
:func:`grant_record`                     grant arbiter ``m_grant``        grant framing
:func:`grant_in`                         control demux                    DGSQ manager ``s_grant``
:func:`arrival`                          egress (reorder, untag)          grant arbiter ``s_arr``
======================================  ==============================  =====================
"""

from amaranth.lib import data, stream

from .header.gse_header import GSE_FIELDS, gse_header_layout

__all__ = [
    "FIELD_BITS",
    "SEQ_BITS",
    "packet_descriptor_layout",
    "packet_descriptor",
    "queued_packet_layout",
    "queued_packet",
    "release_request_layout",
    "release_request",
    "container_release_layout",
    "container_release",
    "PKT_COUNT_BITS",
    "release_report_layout",
    "release_report",
    "emitted_packet_layout",
    "emitted_packet",
    "spray_descriptor_layout",
    "spray_descriptor",
    "ControlHeaderLayout",
    "control_header",
    "VOID_BITS",
    "request_record_layout",
    "request_record",
    "grant_record_layout",
    "grant_record",
    "GrantInLayout",
    "grant_in",
    "arrival_layout",
    "arrival",
]

#: Width of each GSE header field, by name (``FIELD_BITS["dst_node"] == 16``).
FIELD_BITS = {name: width for name, _off, _n, _lsb, width in GSE_FIELDS}
SEQ_BITS = FIELD_BITS["seq"]

_KEY = ("dst_node", "port", "tc", "tenant")  # a DGSQ's key (brief section 4)


def _fields(*names):
    return {n: FIELD_BITS[n] for n in names}


# ---- host ingress -> DGSQ manager -> VOQ buffer --------------------------------------


def packet_descriptor_layout():
    """A packet entering the leaf's VOQ: its DGSQ key and its length in bytes (as stored:
    the tagged frame)."""
    return data.StructLayout({**_fields(*_KEY), "bytes": FIELD_BITS["len"]})


def packet_descriptor():
    return stream.Signature(packet_descriptor_layout())


def queued_packet_layout(queue_bits, tenant_bits):
    """The same packet with the dynamic queue it goes to (``queue`` = DGSQ id = VOQ queue)
    and its tenant's accounting index (the low ``tenant_bits`` of the tenant id)."""
    return data.StructLayout({"queue": queue_bits, "tenant": tenant_bits, "bytes": FIELD_BITS["len"]})


def queued_packet(queue_bits, tenant_bits):
    return stream.Signature(queued_packet_layout(queue_bits, tenant_bits))


def release_request_layout(queue_bits, credit_bits):
    """Release up to ``credit`` bytes of whole packets of ``queue`` (one container)."""
    return data.StructLayout({"queue": queue_bits, "credit": credit_bits})


def release_request(queue_bits, credit_bits):
    return stream.Signature(release_request_layout(queue_bits, credit_bits))


def container_release_layout(queue_bits, credit_bits):
    """The DGSQ manager's release of one container: a :func:`release_request_layout`
    plus the queue's ``dst_node``, which the container framing stamps into it."""
    return data.StructLayout({"queue": queue_bits, "credit": credit_bits, "dst_node": FIELD_BITS["dst_node"]})


def container_release(queue_bits, credit_bits):
    return stream.Signature(container_release_layout(queue_bits, credit_bits))


#: Width of a release report's packet count (a release sends at most one packet per
#: buffer cell).
PKT_COUNT_BITS = 16


def release_report_layout(queue_bits, credit_bits):
    """A release is done: the credit it used (bytes, each packet rounded up to the credit
    unit; may exceed the request by one packet) and how many packets it sent."""
    return data.StructLayout({"queue": queue_bits, "bytes": credit_bits, "pkts": PKT_COUNT_BITS})


def release_report(queue_bits, credit_bits):
    return stream.Signature(release_report_layout(queue_bits, credit_bits))


def emitted_packet_layout(queue_bits):
    """One packet leaving the VOQ buffer, handed over no later than its first beat:
    its queue, its length in bytes (as stored) and ``last``, the last packet of its
    release (so of its container)."""
    return data.StructLayout({"queue": queue_bits, "len": FIELD_BITS["len"], "last": 1})


def emitted_packet(queue_bits):
    return stream.Signature(emitted_packet_layout(queue_bits))


def spray_descriptor_layout():
    """What the sprayer stamps into one packet: destination, DGSQ, ttl, the original
    frame length, and ``last`` (last packet of its container)."""
    return data.StructLayout({**_fields("dst_node", "dgsq", "ttl", "len"), "last": 1})


def spray_descriptor():
    return stream.Signature(spray_descriptor_layout())


# ---- REQUEST / GRANT -----------------------------------------------------------------

#: A control frame's header fields (all but ``ver``, which is always 1): what the
#: control-frame encoder takes and the decoder gives. ``next_type`` is 0 in GRANTs and
#: PROBEs; a REQUEST carries its queue's void-GRANT count in it (docs/protocol.md).
ControlHeaderLayout = gse_header_layout(omit=("ver",))

#: Bits of a REQUEST's void-GRANT count (``next_type`` bits 7:0; the count wraps).
VOID_BITS = 8


def control_header():
    return stream.Signature(ControlHeaderLayout)


def request_record_layout():
    """A decoded REQUEST: who asks (``src_node``, ``dgsq``), for what class and tenant,
    the backlog in credit units (the REQUEST's ``len``), ``seq``: the seq of the
    last GRANT that queue received (the source's acknowledgement), and ``voids``: how
    many of its GRANTs brought no container, modulo ``2**VOID_BITS`` (the REQUEST's
    ``next_type`` bits 7:0)."""
    return data.StructLayout(
        {
            **_fields("src_node", "dgsq", "tc", "tenant"),
            "backlog": FIELD_BITS["len"],
            "seq": SEQ_BITS,
            "voids": VOID_BITS,
        }
    )


def request_record():
    return stream.Signature(request_record_layout())


def grant_record_layout(slot_bits):
    """One grant decision of an egress port's arbiter: the requester, class, tenant,
    ``credit`` in credit units (the GRANT's ``len``), ``seq``, and the arbiter's
    ``slot`` (local; not on the wire)."""
    return data.StructLayout(
        {
            "slot": slot_bits,
            **_fields("src_node", "dgsq", "tc", "tenant"),
            "credit": FIELD_BITS["len"],
            "seq": SEQ_BITS,
        }
    )


def grant_record(slot_bits):
    return stream.Signature(grant_record_layout(slot_bits))


#: The GRANT fields the DGSQ manager uses: ``src_node`` (the granting leaf), ``port``
#: (its egress port), ``seq``, ``len`` (credit units), ``dgsq`` (the queue), ``type``.
GrantInLayout = gse_header_layout(omit=("ver", "flags", "tc", "tenant", "dst_node", "ttl", "next_type"))


def grant_in():
    return stream.Signature(GrantInLayout)


def arrival_layout():
    """Granted data that arrived at the egress, per packet: ``credits`` credit units of
    queue (``src_node``, ``dgsq``); ``last`` marks the container's last packet."""
    return data.StructLayout({**_fields("src_node", "dgsq"), "credits": FIELD_BITS["len"], "last": 1})


def arrival():
    return stream.Signature(arrival_layout())

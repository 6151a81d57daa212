"""Records of the DGSQ manager's parts: what they hand each other.

The manager's ports take theirs from :mod:`opengse.rtl.interfaces` (the records blocks
exchange); the names the manager had for them stay here as aliases.
"""

from amaranth import signed
from amaranth.lib import data

from ... import interfaces
from ...interfaces import VOID_BITS
from ...header.gse_header import CREDIT_UNIT_BYTES

__all__ = [
    "GrantInLayout",
    "pkt_in_layout",
    "CREDIT_BITS",
    "key_layout",
    "context_layout",
    "event_layout",
    "operand_layout",
    "calc_layout",
    "LOG_CREDIT_UNIT",
]

#: log2 of the credit unit (64 B): credit bytes <-> credit units is a shift.
LOG_CREDIT_UNIT = CREDIT_UNIT_BYTES.bit_length() - 1

#: Width of release credit and release reports, bytes (``m_rel``, ``s_rel_done``).
CREDIT_BITS = 24

#: The GRANT fields the manager uses (:data:`opengse.rtl.interfaces.GrantInLayout`).
GrantInLayout = interfaces.GrantInLayout

#: A packet entering the VOQ buffer (:func:`opengse.rtl.interfaces.packet_descriptor_layout`).
pkt_in_layout = interfaces.packet_descriptor_layout


def key_layout():
    """A dynamic queue's key (brief section 4)."""
    return data.StructLayout({n: interfaces.FIELD_BITS[n] for n in ("dst_node", "port", "tc", "tenant")})


def context_layout():
    """One word of the context memory (199 bits), the state of one dynamic queue."""
    return data.StructLayout(
        {
            "backlog": 24,  # credit bytes queued in the VOQ (each packet rounded up
            # to whole credit units), not yet released
            "balance": signed(24),  # credit bytes: granted minus sent (negative: overrun debt)
            # GRANT credit that came while a release was out (its own container follows that
            # release's report), and balance + pg kept alongside (one carry chain each).
            "pg": 24,
            "bal_pg": signed(24),
            "view": 16,  # the arbiter's idea of our demand, credit units
            "ack": 16,  # seq of the last GRANT received
            # GRANTs whose credit waits in pg (their outcome, a container or a void, is
            # decided at the release report), and the count of GRANTs that brought no
            # container (void), modulo 256: REQUESTs carry it (next_type) so that the
            # arbiter stops expecting their containers.
            "npg": 4,
            "voids": VOID_BITS,
            "have_ack": 1,
            "rel_pending": 1,  # a release is out at the VOQ buffer
            "nz": 1,  # backlog != 0 (kept so no zero test sits on the read data)
            "ts_act": 16,  # coarse times of the last activity, REQUEST, GRANT
            "ts_req": 16,
            "ts_grant": 16,
            # The key again (the CAM copy is in flip-flops): REQUEST fields and the GRANT
            # check come from the memory word instead of a 64:1 multiplexer.
            "dst_node": 16,
            "port": 8,
            "tc": 3,
            "tenant": 12,
        }
    )


def event_layout():
    """The kind of the event in the engine (one-hot; all zero before the first)."""
    return data.StructLayout({"rel": 1, "grant": 1, "pkt": 1, "req": 1, "sweep": 1})


def operand_layout():
    """The event's operands, registered at ACCEPT (only those of its kind are meaningful)."""
    return data.StructLayout(
        {
            # PKT (its length is a port of its own: it goes straight to m_pkt)
            # The packet's credit in whole credit units (its length rounded up): the VOQ
            # buffer reports releases in the same rounded bytes, and the egress reports
            # arrivals per packet in credit units, so backlog, balance and the arbiter agree.
            "pkt_cu": 16 - LOG_CREDIT_UNIT + 1,
            "bytes_nz": 1,  # pkt_bytes != 0
            "pkt_key": key_layout(),
            # REL: the credit bytes the release used
            "rel_bytes": 24,
            # GRANT
            "g_src_node": 16,
            "g_port": 8,
            "g_seq": 16,
            "g_len": 16,
            "g_pre": 1,  # GRANT type and id range fine
            "g_seq_m1": 16,  # seq - 1
            "g_neg": signed(24),  # -(granted credit bytes)
        }
    )


def calc_layout(n_ctx):
    """What CALC registers from the context word read for the event."""
    return data.StructLayout(
        {
            "qoh": n_ctx,  # one-hot q, for the flag vectors after WRITE
            "valid_q": 1,  # the context is live (or being allocated)
            "pend_q": 1,  # a REQUEST is due for it
            "p_nb": 25,  # PKT: backlog + the packet's bytes rounded up to units
            # PKT: view + container - 1 (credit units) neither overflows nor is all ones,
            # and backlog + the packet's bytes > (view + container - 1) * 64 + credit
            # granted, not reported
            "p_thr_ok": 1,
            "p_gt": 1,
            "r_diff": 24,  # REL: backlog - bytes (valid if r_gt)
            "r_gt": 1,  # REL: backlog > bytes (backlog left)
            "r_neg": 1,  # REL: balance - bytes < 0
            "r_a": signed(26),  # REL: balance + pg - bytes
            "r_zero": 1,  # REL: the release sent nothing (bytes == 0)
            "npg_m1": 4,  # npg - 1, floored at 0
            "npg_nz": 1,  # npg != 0
            "npg_m1_nz": 1,  # npg - 1 (floored) != 0
            # the context's void count after a REL (with a next container that takes
            # one container's credit / all that is left; with none) and after a GRANT
            "v_big": VOID_BITS,  # voids + r_zero
            "v_all": VOID_BITS,  # voids + npg_m1 + r_zero
            "v_none": VOID_BITS,  # voids + npg + r_zero
            "v_inc": VOID_BITS,  # voids + 1
            "r_a_rem": signed(26),  # REL: balance + pg - bytes - container
            "pg_rem": signed(26),  # REL: pg - container
            "g_pg": 24,  # GRANT: pg + credit
            "g_balpg": signed(24),  # GRANT: balance + pg + credit
            "g_credit": signed(26),  # GRANT: balance + credit
            "g_pos": 1,  # GRANT: balance + credit > 0
            "g_rel": 1,  # GRANT: g_pos, backlog and no release out: release the credit
            "r_next_pos": 1,  # REL: the balance after the report is > 0
            "r_big": 1,  # REL: more than a container's credit is left
            "rel_next": 1,  # REL: r_next_pos and backlog left: a next container
            "g_vdiff": 17,  # GRANT: view - len (bit 16: borrow, clip to 0)
            "g_ok": 1,  # GRANT: type, id range, live context and key (src_node, port) fine
            "g_older": 1,  # GRANT: seq is not after ack (serial order): ack stays
            "u_sum": 20,  # REQ: (backlog - granted + 63) >> 6, units before clipping (bit 19: < 0)
            "e_req": 16,  # SWEEP: coarse time since REQUEST, GRANT, activity
            "e_grant": 16,
            "e_act": 16,
        }
    )

"""The grant arbiter's records and constants: what it receives and sends (taken from
:mod:`opengse.rtl.interfaces`), its configuration write, and one word of its slot
memory."""

from amaranth import signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from ...interfaces import SEQ_BITS, VOID_BITS, arrival_layout, grant_record_layout, request_record_layout

__all__ = [
    "N_CLASSES",
    "SEQ_BITS",
    "DEBT_MAX",
    "OP_REQ",
    "OP_ARR",
    "OP_EXP",
    "OP_GNT",
    "GRANT_STAGES",
    "ENGINE_STAGES",
    "AGE_MAX",
    "request_layout",
    "arrival_layout",
    "grant_layout",
    "cfg_layout",
    "slot_layout",
    "grant_writeback",
    "engine_writeback",
]

N_CLASSES = 8  # traffic classes 0..7, 7 highest
DEBT_MAX = 511  # credit units an overrun may leave as debt (clamped)

# Operations of the slot-update pipeline.
OP_REQ, OP_ARR, OP_EXP, OP_GNT = range(4)
#: Stages of the two slot-update lanes, entry to write-back (grant_lane.py, engine_lane.py).
GRANT_STAGES = 6
ENGINE_STAGES = 8
#: Lease age at which a slot's containers are written off (in lease ticks).
AGE_MAX = 4

#: A decoded REQUEST (``s_req``): :func:`~opengse.rtl.interfaces.request_record_layout`.
request_layout = request_record_layout


def grant_layout(slot_bits):
    """One GRANT decision (``m_grant``): :func:`~opengse.rtl.interfaces.grant_record_layout`."""
    return grant_record_layout(slot_bits)


def cfg_layout(tid_bits):
    """A weight write (``s_cfg``): the weight-table entry and its weight (0 means 1)."""
    return data.StructLayout({"tenant": tid_bits, "weight": 8})


def slot_layout(inflight_bits, cleft_bits):
    """One word of the slot memory: a requester's key, class, tenant and credit state."""
    return data.StructLayout(
        {
            "src_node": 16,
            "dgsq": 16,
            "tc": 3,
            "tenant": 12,
            "demand": 16,  # credit units still to grant
            "inflight": inflight_bits,  # containers granted and not yet arrived
            "cleft": signed(cleft_bits),  # credit granted minus arrived (negative: debt)
            "gseq": SEQ_BITS,  # seq of the last GRANT sent
            "quota": 8,  # grants left in this round (when in the round)
            "voids": VOID_BITS,  # the source's void-GRANT count, as last reported
        }
    )


def grant_writeback(n, grant_credits):
    """The grant lane's write-back of a slot, producer side (per-slot flags of the new
    word, for :class:`~.slot_flags.SlotFlags`, :class:`~.lease.LeaseTimers` and
    :class:`~.credit.CreditGate`): ``en``, ``oh`` (the slot), ``elig`` (demand left and
    room in flight), ``infl`` (containers in flight), ``qlast`` (quota 1 left), ``w1``
    (weight 1), ``idle`` (the grant was from idle: the lease starts), ``release``
    (credit units released: debt the grant repaid)."""
    return wiring.Signature(
        {
            "en": Out(1),
            "oh": Out(n),
            "elig": Out(1),
            "infl": Out(1),
            "qlast": Out(1),
            "w1": Out(1),
            "idle": Out(1),
            "release": Out(range(grant_credits + 1)),
        }
    )


def engine_writeback(n, cleft_bits):
    """The engine lane's write-back of a slot, producer side: ``en``, ``oh``, ``live``
    (demand or containers in flight: the slot stays), ``elig``, ``infl``, ``req`` (the
    operation was a REQUEST) and ``hit`` (for a slot it had), the new word's ``tc``,
    ``q1`` (its quota is 1), ``restart`` (progress: the lease restarts) and
    ``release`` (credit units released)."""
    return wiring.Signature(
        {
            "en": Out(1),
            "oh": Out(n),
            "live": Out(1),
            "elig": Out(1),
            "infl": Out(1),
            "req": Out(1),
            "hit": Out(1),
            "tc": Out(3),
            "q1": Out(1),
            "restart": Out(1),
            "release": Out(cleft_bits),
        }
    )

"""ContextCalc: the DGSQ manager's CALC stage, the arithmetic on a context word."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...header.gse_header import CREDIT_UNIT_BYTES
from .layouts import LOG_CREDIT_UNIT, calc_layout, context_layout, operand_layout

__all__ = ["ContextCalc"]


class ContextCalc(wiring.Component):
    """Every adder and comparator the WRITE decisions need, on the memory's read data.

    Interface: ``en`` (the engine's CALC clock), ``cur`` (the context memory's read
    data: the word of the event's context), the event's operands ``op``, ``now`` (the
    coarse time), the live set ``valid`` and the ``pending`` bits with the event's
    context ``q_sel`` (bit selects), ``q_dec`` (one-hot decode) and ``fresh`` (the packet
    allocated it) in. Out: ``c``, the context word as read, and ``res``
    (:func:`~.layouts.calc_layout`: sums, differences and signs for every event kind,
    one carry chain each, and the context's one-hot, live and pending bits).

    Timing: all registered in the ``en`` clock, held until the next one: WRITE, the
    clock after CALC, sees only registers (no adder on the read data's path to an
    output or to the write-back).
    """

    def __init__(self, n_ctx, container_units):
        self.n_ctx = n_ctx
        self.container_units = container_units
        qb = max(1, (n_ctx - 1).bit_length())
        super().__init__(
            {
                "en": In(1),
                "cur": In(context_layout()),
                "op": In(operand_layout()),
                "now": In(16),
                "valid": In(n_ctx),
                "pending": In(n_ctx),
                "q_sel": In(qb),
                "q_dec": In(qb),
                "fresh": In(1),
                "c": Out(context_layout()),
                "res": Out(calc_layout(n_ctx)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        CU = self.container_units
        LCU = LOG_CREDIT_UNIT
        cur, op, res, now = self.cur, self.op, self.res, self.now
        # Comparisons as subtractions whose sign is the answer: one carry chain each.
        g_pos_d = (op.g_neg - cur.balance)[-1]  # balance + credit > 0
        r_gt_d = (op.rel_bytes - cur.backlog)[-1]  # backlog > bytes (borrow)
        r_a_pos_d = (op.rel_bytes - cur.bal_pg)[-1]  # balance + pg - bytes > 0
        CUB = CU * CREDIT_UNIT_BYTES  # one container's credit, bytes
        # Operand-only terms are summed beside the memory read, so that each result
        # below is one carry chain behind the read data (three chained ones put p_gt
        # at 7.5 ns, the manager's critical path, out of context).
        rel_cub = Signal(len(op.rel_bytes) + 1)
        m.d.comb += rel_cub.eq(op.rel_bytes + CUB)
        r_a_big_d = (rel_cub - cur.bal_pg)[-1]  # balance + pg - bytes > CUB
        # Credit granted and not yet reported (the release out and GRANTs held): its
        # data is still in the backlog but no longer demand the arbiter should grant.
        granted = Signal(len(cur.bal_pg) - 1)  # bal_pg when positive, else 0
        m.d.comb += granted.eq(Mux(cur.bal_pg[-1], 0, cur.bal_pg[:-1]))
        # backlog + (CREDIT_UNIT_BYTES - 1) - granted, as backlog + ~granted + CREDIT_UNIT_BYTES
        # (bits LCU .. LCU + 19 are taken: 26 bits hold them, modulo 2**26)
        ungranted_r = _sum3(m, "ungranted", 26, cur.backlog, ~_ext(granted, 26), C(CREDIT_UNIT_BYTES, 26))
        valid_q = self.valid.bit_select(self.q_sel, 1) | self.fresh
        # WRITE's release decisions, whole (WRITE only combines them with the kind)
        r_neg_d = (cur.balance - op.rel_bytes)[-1]
        r_next_pos_d = Mux(r_neg_d, r_a_pos_d, cur.pg != 0)
        p_nb = Signal(25)
        p_thr = Signal(17)
        npg_m1 = Signal(4)
        r_zero = Signal()
        m.d.comb += [
            p_nb.eq(cur.backlog + Cat(C(0, LCU), op.pkt_cu)),
            p_thr.eq(cur.view + (CU - 1)),
            npg_m1.eq(Mux(cur.npg == 0, 0, cur.npg - 1)),
            r_zero.eq(op.rel_bytes == 0),
        ]
        # p_gt: (p_thr << LCU) + granted < p_nb, i.e. the sign of
        # (view << LCU) + granted + ~backlog + (((CU - 1) - pkt_cu) << LCU) + 1
        # (27 bits hold it), the last term from the operands alone
        W = 27
        p_k = Signal(W)
        m.d.comb += p_k.eq(C(((CU - 1) << LCU) + 1, W) - Cat(C(0, LCU), op.pkt_cu))
        p_diff = _sum4(m, "p_diff", W, Cat(C(0, LCU), cur.view), granted, ~_ext(cur.backlog, W), p_k)
        with m.If(self.en):
            m.d.sync += [
                res.qoh.eq(Cat(self.q_dec == i for i in range(n))),
                res.valid_q.eq(valid_q),
                res.pend_q.eq(self.pending.bit_select(self.q_sel, 1)),
                self.c.eq(cur),
                res.p_nb.eq(p_nb),
                res.p_thr_ok.eq(~p_thr[16] & (p_thr[:16] != 0xFFFF)),
                res.p_gt.eq(p_diff[-1]),
                res.r_diff.eq(cur.backlog - op.rel_bytes),
                res.r_gt.eq(r_gt_d),
                res.r_neg.eq(r_neg_d),
                res.r_a.eq(cur.bal_pg - op.rel_bytes),
                res.r_zero.eq(r_zero),
                res.npg_m1.eq(npg_m1),
                res.v_big.eq(cur.voids + r_zero),
                res.v_all.eq(cur.voids + npg_m1 + r_zero),
                res.v_none.eq(cur.voids + cur.npg + r_zero),
                res.v_inc.eq(cur.voids + 1),
                res.npg_nz.eq(cur.npg != 0),
                res.npg_m1_nz.eq(cur.npg[1:] != 0),
                res.r_a_rem.eq(cur.bal_pg - rel_cub),
                res.pg_rem.eq(cur.pg - CUB),
                res.g_pg.eq(cur.pg + (op.g_len << 6)),
                res.g_balpg.eq(cur.bal_pg + (op.g_len << 6)),
                res.g_credit.eq(cur.balance + (op.g_len << 6)),
                res.g_pos.eq(g_pos_d),
                res.g_rel.eq(g_pos_d & cur.nz & ~cur.rel_pending),
                res.r_next_pos.eq(r_next_pos_d),
                res.r_big.eq(Mux(r_neg_d, r_a_big_d, cur.pg > CUB)),
                res.rel_next.eq(r_next_pos_d & r_gt_d),
                res.g_vdiff.eq(cur.view - op.g_len),
                # seq - ack in 1..32767: after ack; else (0, or "negative") not after it
                res.g_older.eq((op.g_seq == cur.ack) | (op.g_seq - cur.ack)[15]),
                # GRANT accepted: type and id range, a live context, the key matches
                res.g_ok.eq(op.g_pre & valid_q & (cur.dst_node == op.g_src_node) & (cur.port == op.g_port)),
                res.u_sum.eq(ungranted_r[LCU : LCU + 20]),
                res.e_req.eq(now - cur.ts_req),
                res.e_grant.eq(now - cur.ts_grant),
                res.e_act.eq(now - cur.ts_act),
            ]
        return m


def _ext(x, width):
    """``x`` (unsigned) zero-extended to ``width`` bits (so that ``~`` complements all)."""
    return Cat(x, C(0, width - len(x)))


def _csa(a, b, c, width):
    """A carry-save step: ``(sum, carry)`` with ``a + b + c == sum + carry`` modulo
    ``2**width`` (one LUT level, no carry chain); operands at most ``width`` bits,
    unsigned."""
    a, b, c = (_ext(x.as_unsigned(), width) for x in (a, b, c))
    return a ^ b ^ c, Cat(C(0, 1), (a & b) | (a & c) | (b & c))[:width]


def _sum3(m, name, width, a, b, c):
    """``(a + b + c) % 2**width`` as a carry-save step and one carry chain."""
    s, k = _csa(a, b, c, width)
    out = Signal(width, name=name)
    m.d.comb += out.eq(s + k)
    return out


def _sum4(m, name, width, a, b, c, d):
    """``(a + b + c + d) % 2**width`` as two carry-save steps and one carry chain."""
    s, k = _csa(a, b, c, width)
    s, k = _csa(s, k, d, width)
    out = Signal(width, name=name)
    m.d.comb += out.eq(s + k)
    return out

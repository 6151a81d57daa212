"""Which slots have an operation in flight: the lanes' stages OR-ed into slot sets."""

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bits import or_all

__all__ = ["LaneStages", "LaneOccupancy"]


class LaneStages(wiring.Signature):
    """A lane's stages, lane side: ``v[k]`` stage k+1 holds an operation, on slot
    ``oh[k]`` (one-hot)."""

    def __init__(self, n, depth):
        self.n, self.depth = n, depth
        super().__init__({"v": Out(depth), "oh": Out(n).array(depth)})


class LaneOccupancy(wiring.Component):
    """Slot sets over both lanes (``g``: grant, ``e``: engine) and the engine's targets.

    * ``busy``: slots with an operation in a lane past stage 1 (registered: as of the
      clock before);
    * ``busy_next``: ... that are still in a lane in this clock (with stage 1: the
      engine's check a clock ahead; registered);
    * ``mask_pre`` (combinational): every lane stage, E's target (``e_tgt`` when
      ``e_v``) and B's possible targets (``b_cands``): the pick's mask before its
      register; the stages past stage 1 come from ``busy`` (the lanes shift every
      clock), so it is an OR of five terms per slot.

    The registered sets are OR-ed a clock early, so none is a wide OR behind a
    register.
    """

    def __init__(self, n, grant_stages, engine_stages):
        super().__init__(
            {
                "g": In(LaneStages(n, grant_stages)),
                "e": In(LaneStages(n, engine_stages)),
                "e_v": In(1),
                "e_tgt": In(n),
                "b_cands": In(n),
                "busy": Out(n),
                "busy_next": Out(n),
                "mask_pre": Out(n),
            }
        )
        self.n, self.pg, self.pe = n, grant_stages, engine_stages

    def elaborate(self, platform):
        m = Module()
        n, PG, PE = self.n, self.pg, self.pe

        def stages(lane, ks):
            return [Mux(lane.v[k], lane.oh[k], 0) for k in ks]

        m.d.sync += [
            self.busy.eq(or_all(stages(self.g, range(PG - 1)) + stages(self.e, range(PE - 1)), n)),
            self.busy_next.eq(or_all(stages(self.g, range(PG - 2)) + stages(self.e, range(PE - 2)), n)),
        ]
        # Every lane stage: stage 1 of each lane as it is, the later ones from ``busy``
        # (the lanes shift every clock, so ``busy`` holds exactly the slots of stages
        # 2..end now). A five-term OR per slot instead of one of all 14 stages.
        m.d.comb += self.mask_pre.eq(
            or_all(
                [self.busy]
                + stages(self.g, range(1))
                + stages(self.e, range(1))
                + [Mux(self.e_v, self.e_tgt, 0), self.b_cands],
                n,
            )
        )
        return m

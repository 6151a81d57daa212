"""Reference model of FabricLink (rtl/tb/link.py), clock by clock, in plain Python.

Written from the link's contract, at the level of frames on the wire: a beat sent in
clock ``t`` reaches the far end in clock ``t + delay``; a frame is delivered whole when
none of its beats reached the far end while the link was failed; one whose head got
through and then met the failure is closed in the first failed clock by a beat with
``last`` and ``user`` = 1; every other beat of a frame touched by a failure is lost.
"""

__all__ = ["LinkModel", "CLOSE"]

#: The beat that closes a cut frame: ``last`` = 1, ``user`` bit 0 = 1, ``keep`` bit 0 = 1;
#: its data and other keep bits are the lost beat's (not part of the contract).
CLOSE = "close"


class LinkModel:
    """Feed :meth:`clock` one clock at a time; read the output and the counters.

    A beat is a tuple ``(data, keep, last, user)``; ``None`` is an idle clock."""

    def __init__(self, delay):
        self.delay = delay
        self.wire = [(None, 0)] * delay  # (beat, pause) in flight, oldest first
        self.frame_ok = None  # None: between frames; True: head delivered, nothing lost; False: lost
        self.frame_counted = False
        self.beats = self.frames = self.beats_lost = self.frames_lost = 0

    def clock(self, beat, fail, pause_in):
        """One clock: what the sender offers (``beat``), the link's ``fail`` and the
        receiver's ``pause_in``; returns ``(out_beat or None, pause_out)`` of this clock."""
        self.wire.append((beat, pause_in))
        arriving, pause_out = self.wire.pop(0)
        pause_out = 0 if fail else pause_out  # a failed link carries no PFC frames
        out = None
        if arriving is not None:
            self.beats += 1
            last = arriving[2]
            if self.frame_ok is None:  # a new frame starts reaching the far end
                self.frame_ok = not fail
                self.frame_counted = False
            lost = True
            if self.frame_ok and fail:  # cut after its head got through
                out = CLOSE
                self.frame_ok = False
            elif self.frame_ok:
                out, lost = arriving, False
            if lost:
                self.beats_lost += 1
                if not self.frame_counted:
                    self.frames_lost += 1
                    self.frame_counted = True
            if last:
                self.frames += 1
                self.frame_ok = None
        elif self.frame_ok and fail:  # cut in an idle clock inside a frame
            out = CLOSE
            self.frame_ok = False
            self.frames_lost += 1
            self.frame_counted = True
        return out, pause_out

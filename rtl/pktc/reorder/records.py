"""Records the parts of the reorder buffer exchange (every one a registered strobe).

* request (header -> ingress decision): a frame's header fields, see ``header.py``.
* decision (ingress decision -> slot writer): per frame, in frame order: ``accept``
  (store its beats), ``claim`` (its container's FIRST frame: start at word 0),
  ``slot``, ``last`` (the frame carries LAST), ``gen`` (the slot's claim generation,
  so that a frame of a container skipped meanwhile cannot write a reclaimed slot).
* ahead (ingress decision -> head scheduler): a FIRST frame of ``src`` dropped as
  W or more ahead, with its ``seq``: evidence of loss with nothing stored.
* proof (ingress decision -> head scheduler): a FIRST frame of ``src`` stored (or a
  copy of one) ``skip_distance`` or more ahead of the next ``seq`` due: the head is
  lost if it is not closed (only built with ``skip_distance`` > 0).
* job (head scheduler -> slot reader): container of ``src`` in ``slot`` to deliver.
* release (slot reader -> all): the container of ``src`` in ``slot`` is done with
  (delivered, or discarded when ``bad``): the source's next ``seq`` advances by one and
  the slot is free, both at the end of the clock the strobe is valid.
* maintenance (head scheduler -> all): the head of ``src`` is skipped (``jump`` = 0:
  the next ``seq`` advances by one, ``slot`` is freed, ``keep``: the timer stays
  expired) or the window jumps to ``seq`` (``jump`` = 1); ``lost`` containers are
  counted, ``overrun``: the skip was proven by a ``proof``, not by the timeout.
  Takes effect at the end of the clock it is valid.
"""

from amaranth.lib import data, stream

from .header import request_layout

__all__ = [
    "request_layout",
    "decision_layout",
    "ahead_layout",
    "proof_layout",
    "job_layout",
    "release_layout",
    "maintenance_layout",
    "strobe",
]


def decision_layout(geo):
    return data.StructLayout({"accept": 1, "claim": 1, "last": 1, "gen": 1, "slot": geo.slot_index_bits})


def ahead_layout(geo):
    return data.StructLayout({"src": geo.src_bits, "seq": 16})


def proof_layout(geo):
    return data.StructLayout({"src": geo.src_bits})


def job_layout(geo):
    return data.StructLayout({"src": geo.src_bits, "slot": geo.slot_index_bits})


def release_layout(geo):
    return data.StructLayout({"src": geo.src_bits, "slot": geo.slot_index_bits, "bad": 1})


def maintenance_layout(geo):
    return data.StructLayout(
        {
            "src": geo.src_bits,
            "slot": geo.slot_index_bits,
            "jump": 1,
            "keep": 1,
            "overrun": 1,
            "seq": 16,
            "lost": 16,
        }
    )


def strobe(layout):
    """A registered strobe: a stream that is always ready."""
    return stream.Signature(layout, always_ready=True)

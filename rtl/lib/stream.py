"""AXI4-Stream packet streams as Amaranth ``stream.Signature``\\ s.

A packet stream carries one beat per transfer: ``data`` (byte 0 of the frame in
``data[7:0]``), ``keep`` (one bit per byte), ``last`` and ``user`` (bit 0 on the
last beat = frame error). Exported Verilog names them ``<port>_tdata``,
``<port>_tkeep``, ``<port>_tlast``, ``<port>_tuser``, ``<port>_tvalid`` and
``<port>_tready`` (see :mod:`opengse.platforms.export`).
"""

from amaranth.lib import data, stream

__all__ = ["AXIStreamSignature", "axis_beat_layout", "is_axis", "check_data_width"]


def check_data_width(data_width):
    """Validate a datapath width: a power of two from 8 to 512 bits."""
    if not isinstance(data_width, int) or data_width < 8 or data_width > 512 or data_width & (data_width - 1):
        raise ValueError(f"data_width must be a power of two from 8 to 512, not {data_width!r}")
    return data_width


def axis_beat_layout(data_width, user_width=1):
    """Struct layout of one AXI4-Stream beat."""
    check_data_width(data_width)
    return data.StructLayout({"data": data_width, "keep": data_width // 8, "last": 1, "user": user_width})


def AXIStreamSignature(data_width, user_width=1):
    """Packet stream signature: AXI4-Stream beats with ``data/keep/last/user``."""
    return stream.Signature(axis_beat_layout(data_width, user_width))


def is_axis(signature):
    """True for a stream signature whose payload is an AXI4-Stream beat."""
    if not isinstance(signature, stream.Signature):
        return False
    shape = signature.members["payload"].shape
    return isinstance(shape, data.StructLayout) and sorted(name for name, _ in shape) == [
        "data",
        "keep",
        "last",
        "user",
    ]

"""AXI4-Stream packets in Amaranth's simulator (``add_testbench`` coroutines): a frame
as beats, a frame driven onto an input with random idle clocks, and the beats taken
from an output gathered back into frames."""

__all__ = ["beats", "send_frame", "take_beat"]


def beats(data, bytes_per_beat):
    """``(data word, tkeep, tlast)`` per beat of ``data`` (byte 0 in the low bits)."""
    for i in range(0, len(data), bytes_per_beat):
        chunk = data[i : i + bytes_per_beat]
        yield int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, i + bytes_per_beat >= len(data)


async def send_frame(ctx, s_axis, data, bytes_per_beat, rng, idle, user=0):
    """Drive ``data`` onto ``s_axis`` beat by beat, ``valid`` low for a clock with
    probability ``idle`` before each beat, each beat held until ``ready``; ``user`` on
    every beat. Returns the clocks it took; leaves ``valid`` high."""
    clocks = 0
    for word, keep, last in beats(data, bytes_per_beat):
        while rng.random() < idle:
            ctx.set(s_axis.valid, 0)
            await ctx.tick()
            clocks += 1
        ctx.set(s_axis.valid, 1)
        ctx.set(s_axis.payload, {"data": word, "keep": keep, "last": last, "user": user})
        while True:
            taken = ctx.get(s_axis.ready)
            await ctx.tick()
            clocks += 1
            if taken:
                break
    return clocks


def take_beat(partial, payload, bytes_per_beat):
    """Add the bytes of a beat taken (its ``payload``) to ``partial`` (a bytearray);
    returns the whole frame at its last beat (``partial`` emptied), else None. A
    ``tkeep`` that is not contiguous from lane 0 fails."""
    keep = payload.keep
    n = bin(keep).count("1")
    assert keep == (1 << n) - 1, f"tkeep {keep:#x} not contiguous"
    partial += int(payload.data).to_bytes(bytes_per_beat, "little")[:n]
    if not payload.last:
        return None
    frame = bytes(partial)
    partial.clear()
    return frame

"""gsectl without hardware: its frame encoder against the scapy layer (two independent
readings of docs/management.md), and bad command lines: one line, exit 2."""

import json
import socket

import pytest
from scapy.layers.l2 import Ether

from opengse.firmware import gsectl
from opengse.firmware.transport import decode_response, encode_request, parse_mac
from opengse.sim.mgmt_scapy import GSEMgmt, MgmtRecord


def test_encoder_matches_scapy():
    dst, src = parse_mac("02:00:00:00:00:01"), parse_mac("02:00:00:00:00:aa")
    records = [(1, 0x10, 0), (2, 0xA4, 0xDEADBEEF)]
    frame = encode_request(dst, src, 0x0123456789ABCDEF, 0x4242, records)
    ref = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:aa") / GSEMgmt(
        key=0x0123456789ABCDEF, seq=0x4242, records=[MgmtRecord(op=o, addr=a, data=d) for o, a, d in records]
    )
    ref_bytes = bytes(ref)
    assert frame == ref_bytes + bytes(60 - len(ref_bytes))
    # a response the way scapy builds one decodes; another seq or a request does not
    resp = Ether(dst="02:00:00:00:00:aa") / GSEMgmt(
        flags=1, seq=7, records=[MgmtRecord(op=1, status=3, addr=0x10, data=5)]
    )
    assert decode_response(bytes(resp), 7) == [(1, 3, 0x10, 5)]
    assert decode_response(bytes(resp), 8) is None
    assert decode_response(frame, 0x4242) is None


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], "the following arguments are required: COMMAND"),
        (["read", "sys.ident"], "one of the arguments --eth --uart --sim is required"),
        (["--sim", "/nonexistent/sock", "frobnicate"], "invalid choice"),
        (["--sim", "/nonexistent/sock", "read", "sys.ident"], "cannot reach the simulation"),
        (["--uart", "/nonexistent/tty", "counters"], "cannot open /nonexistent/tty"),
        (["--uart", "/dev/null", "counters"], "is not a serial device"),
        (["--sim", "x", "--key", "0x1" + "0" * 16, "read", "sys.ident"], "--key must fit 64 bits"),
        (["--sim", "x", "--key", "nokey", "read", "sys.ident"], "--key 'nokey' is not an integer"),
        (["--sim", "x", "--dst", "zz", "read", "sys.ident"], "--dst"),
        (["--sim", "x", "--timeout", "0", "read", "sys.ident"], "--timeout must be > 0"),
        (["--sim", "x", "--map", "/nonexistent.json", "read", "sys.ident"], "cannot read the register map"),
    ],
)
def test_bad_command_lines(argv, words, capsys):
    assert gsectl.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err


def test_not_a_map(tmp_path, capsys):
    bad = tmp_path / "map.json"
    bad.write_text(json.dumps({"blocks": [{"name": "x"}]}))
    assert gsectl.main(["--sim", "x", "--map", str(bad), "read", "sys.ident"]) == 2
    assert "is not a register map" in capsys.readouterr().err


def test_no_answer(tmp_path, capsys):
    # a socket that takes frames and never answers: the timeout, one line
    path = tmp_path / "sink.sock"
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(str(path))
    m = tmp_path / "map.json"
    from opengse.rtl.regs.description import RegisterMap
    from opengse.rtl.regs.system import system_block

    m.write_text(json.dumps(RegisterMap([system_block()], name="t", doc="t").as_dict()))
    argv = ["--sim", str(path), "--map", str(m), "--timeout", "0.05", "--retries", "1", "read", "sys.ident"]
    assert gsectl.main(argv) == 2
    err = capsys.readouterr().err
    assert "no answer to a management frame within 0.05 s (2 attempts)" in err and err.count("\n") == 1
    sink.setblocking(False)
    assert len(sink.recv(2048)) == 60 and len(sink.recv(2048)) == 60  # two attempts were sent
    sink.close()


def test_map_file_clock(tmp_path, capsys):
    """``gse build`` writes the core clock into the map file (``clock_hz``); gsectl takes
    it for ``watch`` and refuses one that is not a positive number."""
    from opengse.rtl.regs.description import RegisterMap
    from opengse.rtl.regs.system import system_block

    doc = RegisterMap([system_block()], name="t", doc="t").as_dict()
    m = tmp_path / "map.json"
    m.write_text(json.dumps({**doc, "clock_hz": 62.5e6}))
    regmap, clock_hz = gsectl._load_map(str(m))
    assert clock_hz == 62.5e6 and [b.name for b in regmap] == ["sys"]
    assert gsectl._load_map(None)[1] is None  # the reference map: no board, no clock
    m.write_text(json.dumps({**doc, "clock_hz": -1}))
    assert gsectl.main(["--sim", "x", "--map", str(m), "read", "sys.ident"]) == 2
    err = capsys.readouterr().err
    assert "is not a register map" in err and "clock_hz must be a positive number" in err, err

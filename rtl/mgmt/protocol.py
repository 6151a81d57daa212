"""The management protocols' constants, shared by the gateware (docs/management.md).

Ethernet (one request frame, one response frame; all multi-byte fields big-endian)::

    byte  0..5   destination MAC        6..11  source MAC (a response: the responder's ``mac``)
    byte 12..13  EtherType 0x88B6 (IEEE 802 local experimental 2; GSE is 0x88B5)
    byte 14..15  magic 0x474D ("GM")    16     version (1)
    byte 17      flags: 0 request, 1 response
    byte 18..25  key (64 bits; 0 in a response)
    byte 26..27  sequence number (echoed)
    byte 28      record count, 1..max_records      29  reserved (0)
    byte 30+12k  record k: op, status, 0, 0, address[4], data[4]

``op``: 1 read, 2 write. ``status`` (response): the AXI4-Lite response, 0 OKAY,
2 SLVERR, 3 DECERR. A read's response carries the data read; a write's echoes the
data written.

UART (8N1), one request, one response, each with a checksum byte that makes the sum of
every byte after the sync byte 0 modulo 256::

    request:  0xA5, op, address[4], data[4], checksum        (11 bytes; a read's data is ignored)
    response: 0x5A, status, data[4], checksum                (7 bytes; a write's data is 0)
"""

ETHERTYPE = 0x88B6
MAGIC = 0x474D
VERSION = 1
FLAG_RESPONSE = 1
HEADER_BYTES = 30
RECORD_BYTES = 12
MIN_FRAME_BYTES = 60  # without FCS: shorter responses are padded with zeros

OP_READ = 1
OP_WRITE = 2

STATUS_OKAY = 0
STATUS_SLVERR = 2
STATUS_DECERR = 3

UART_REQUEST_SYNC = 0xA5
UART_RESPONSE_SYNC = 0x5A
UART_REQUEST_BYTES = 11
UART_RESPONSE_BYTES = 7

#: The source MAC of the responses when a top gives none (locally administered).
DEFAULT_MAC = 0x02_00_00_00_00_01

#: The key a top gets when it gives none. A product top must set its own.
DEFAULT_KEY = 0x4F50454E_47534521  # "OPENGSE!"

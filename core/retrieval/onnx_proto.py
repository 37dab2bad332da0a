"""Just enough of ONNX's protobuf wire format to write a small graph with numpy initialisers.

Why: the search prefilter builds a one-off graph at every index construction (every app start, every
scaling sub-index), and the query encoder's graph is built on a fresh clone's first start; importing the `onnx`
package for either cost 0.4-1.5 s here (0.68 s of a fresh clone's first answer). Field numbers are those of
onnx.proto (proto2); tests check the bytes with onnx's own parser and checker. A message is kept as its pieces
(Message), a tensor's data as a view of its array, and joined once by model(): joining every nested message as it
was made copied the encoder's 90 MB of weights six times on a fresh clone's first start, and the prefilter's
18 MB of codes on every start (docs/benchmarks.md).
"""
from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 6,
          np.dtype(np.int64): 7}
Dim = int | str  # a fixed size, or a symbolic one


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@dataclass(frozen=True)
class Message:
    """Encoded fields as pieces (bytes, or views of arrays) and their total size, so that nesting copies nothing."""

    pieces: tuple[bytes | memoryview, ...]
    size: int


def _message(*parts: bytes | memoryview | Message) -> Message:
    pieces: list[bytes | memoryview] = []
    size = 0
    for part in parts:
        if isinstance(part, Message):
            pieces.extend(part.pieces)
            size += part.size
        else:
            pieces.append(part)
            size += part.nbytes if isinstance(part, memoryview) else len(part)
    return Message(tuple(pieces), size)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _field(field: int, value: bytes | str | memoryview | Message) -> Message:
    """A length-delimited field: a string, raw bytes or a nested message."""
    inner = _message(value.encode() if isinstance(value, str) else value)
    return _message(_varint(field << 3 | 2) + _varint(inner.size), inner)


def tensor(name: str, array: np.ndarray) -> Message:
    """TensorProto: dims, data type, name, little-endian raw data (a view of the array, which must not change
    until model() has joined it)."""
    array = np.ascontiguousarray(array)
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).reshape(-1)  # astype keeps it contiguous
    return _message(*(_int(1, d) for d in array.shape), _int(2, DTYPES[array.dtype]), _field(8, name),
                    _field(9, memoryview(raw).cast("B")))


def value_info(name: str, dtype: type, shape: Sequence[Dim]) -> Message:
    """ValueInfoProto of a tensor: name, element type and shape (ints fixed, strings symbolic)."""
    dims = _message(*(_field(1, _int(1, d) if isinstance(d, int) else _field(2, d)) for d in shape))
    return _message(_field(1, name), _field(2, _field(1, _message(_int(1, DTYPES[np.dtype(dtype)]), _field(2, dims)))))


def _attribute(key: str, value: int | float) -> Message:
    """AttributeProto: an INT (type 2, field i) or a FLOAT (type 1, field f, fixed32)."""
    if isinstance(value, float):
        return _message(_field(1, key), _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, 1))
    return _message(_field(1, key), _int(3, value) + _int(20, 2))


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
         **attributes: int | float) -> Message:
    """NodeProto with integer and float attributes, in the default domain or another (e.g. com.microsoft)."""
    return _message(*(_field(1, i) for i in inputs), *(_field(2, o) for o in outputs), _field(4, op_type),
                    *(_field(5, _attribute(key, value)) for key, value in attributes.items()),
                    *((_field(7, domain),) if domain else ()))


def model(name: str, nodes: Sequence[Message], initialisers: Sequence[Message], inputs: Sequence[Message],
          outputs: Sequence[Message], opset: int, ir_version: int = 9, domains: Mapping[str, int] | None = None
          ) -> bytes:
    """ModelProto bytes, ready for onnxruntime.InferenceSession; `domains` are further operator sets by version."""
    graph = _message(*(_field(1, n) for n in nodes), _field(2, name), *(_field(5, t) for t in initialisers),
                     *(_field(11, i) for i in inputs), *(_field(12, o) for o in outputs))
    opsets = {"": opset, **(domains or {})}
    whole = _message(_int(1, ir_version), *(_field(8, _message(_field(1, domain), _int(2, version)))
                                            for domain, version in opsets.items()), _field(7, graph))
    return b"".join(whole.pieces)

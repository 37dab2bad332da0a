"""Just enough of ONNX's protobuf wire format to write a small graph with numpy initialisers.

Why: the search prefilter builds a one-off graph at every index construction (every app start, every
scaling sub-index), and the query encoder's graph is built on a fresh clone's first start; importing the `onnx`
package for either cost 0.4-1.5 s here (0.68 s of a fresh clone's first answer). Field numbers are those of
onnx.proto (proto2); tests check the bytes with onnx's own parser and checker.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

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


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def tensor(name: str, array: np.ndarray) -> bytes:
    """TensorProto: dims, data type, name, little-endian raw data."""
    array = np.ascontiguousarray(array)
    return (b"".join(_int(1, d) for d in array.shape) + _int(2, DTYPES[array.dtype]) + _bytes(8, name)
            + _bytes(9, array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()))


def value_info(name: str, dtype: type, shape: Sequence[Dim]) -> bytes:
    """ValueInfoProto of a tensor: name, element type and shape (ints fixed, strings symbolic)."""
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, DTYPES[np.dtype(dtype)]) + _bytes(2, dims)))


def _attribute(key: str, value: int | float) -> bytes:
    """AttributeProto: an INT (type 2, field i) or a FLOAT (type 1, field f, fixed32)."""
    if isinstance(value, float):
        return _bytes(1, key) + _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, 1)
    return _bytes(1, key) + _int(3, value) + _int(20, 2)


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
         **attributes: int | float) -> bytes:
    """NodeProto with integer and float attributes, in the default domain or another (e.g. com.microsoft)."""
    return (b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs) + _bytes(4, op_type)
            + b"".join(_bytes(5, _attribute(key, value)) for key, value in attributes.items())
            + (_bytes(7, domain) if domain else b""))


def model(name: str, nodes: Sequence[bytes], initialisers: Sequence[bytes], inputs: Sequence[bytes],
          outputs: Sequence[bytes], opset: int, ir_version: int = 9, domains: Mapping[str, int] | None = None
          ) -> bytes:
    """ModelProto bytes, ready for onnxruntime.InferenceSession; `domains` are further operator sets by version."""
    graph = (b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name) + b"".join(_bytes(5, t) for t in initialisers)
             + b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs))
    opsets = {"": opset, **(domains or {})}
    return (_int(1, ir_version) + b"".join(_bytes(8, _bytes(1, domain) + _int(2, version))
                                            for domain, version in opsets.items()) + _bytes(7, graph))

"""The exact copy's rows in int8 codes, read first by a search: float32 only for the rows that can win.

A search over the copy reads every row's vector: 15 MB at 10,000 rows, which after a query's
embedding come from memory, not cache (the product is memory-bound, docs/BENCHMARKS.md). The codes
(algorithms/int8_bounds.py) are a quarter of that, multiplied by onnxruntime's integer kernel with
the codes packed once, as a constant of a one-operator graph. Their exact bound then leaves a few
rows more than the search asks for, whose float32 products are computed as the whole product would
compute them: the search's answer is the same, bit for bit (tests/test_int8_rows.py).

Rows of one load of the copy never change (commits append), so the codes of a load's rows stay
valid; rows appended since they were made are computed in float32, and a background build codes
them again once they are many. onnxruntime is loaded with the model already; this builds nothing
for copies too small to gain.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...algorithms.int8_bounds import QUERY_ZERO, RowTerms, code_rows
from ...embeddings.graph_build import onnxruntime_module

log = logging.getLogger(__name__)

# Rows from which the codes are worth their build (below, the float32 rows fit in cache anyway).
MIN_ROWS = 2048
# Codes cover a multiple of this many rows: a float32 product over the rows after them, started at
# such a row, computes each row as the whole product does (storage/search/blas.py).
ALIGN = 64
# Rows appended since the codes were made, computed in float32, before the codes are made again.
STALE_ROWS = 1024


@dataclass(frozen=True)
class CodedRows:
    """Codes of rows [0, rows) of one load of the copy, with the session that multiplies them."""

    load: int
    rows: int
    terms: RowTerms
    session: Any  # onnxruntime.InferenceSession, holding the codes

    def products(self, levels: np.ndarray) -> np.ndarray:
        """(2, rows) int32: each query level (uint8, zero point QUERY_ZERO) times each row's codes."""
        return self.session.run(None, {"levels": levels})[0]


class Int8Rows:
    """The codes of the copy's current load, made in the background."""

    def __init__(self, min_rows: int = MIN_ROWS, stale_rows: int = STALE_ROWS) -> None:
        self._min_rows = min_rows
        self._stale_rows = stale_rows
        self._coded: CodedRows | None = None
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None

    def usable(self, load: int, n: int, vectors: np.ndarray) -> CodedRows | None:
        """The codes of rows of this load (None when there are none yet); starts coding the rows
        [0, n) in the background when there are none or when many rows came after them."""
        coded = self._coded
        if coded is not None and coded.load != load:
            coded = None
        if n >= self._min_rows and (coded is None or n - coded.rows > self._stale_rows):
            self._build_in_background(load, n, vectors)
        return coded

    def _build_in_background(self, load: int, n: int, vectors: np.ndarray) -> None:
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(
                target=self._build, args=(load, n, vectors), name="int8-rows", daemon=True
            )
            self._building.start()

    def _build(self, load: int, n: int, vectors: np.ndarray) -> None:
        rows = n // ALIGN * ALIGN
        try:
            codes, terms = code_rows(vectors[:rows])
            session = _session(_product_graph(codes))
            del codes  # the session holds them, packed
        except Exception:  # noqa: BLE001 - only a speed-up: searches read the float32 rows
            log.warning("could not code the exact copy's rows; searches read them in float32", exc_info=True)
            return
        with self._lock:
            current = self._coded
            if current is None or current.load < load or (current.load == load and current.rows < rows):
                self._coded = CodedRows(load, rows, terms, session)

    def release(self) -> None:
        """Drop the codes (the copy is gone: a later load codes its own rows)."""
        self._coded = None

    def wait(self) -> None:
        """Until a build under way ends (tests)."""
        building = self._building
        if building is not None:
            building.join()


def _session(graph: bytes) -> Any:
    ort = onnxruntime_module()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


# ---- the graph: one MatMulInteger, written as ONNX protobuf bytes ---------------------------
# Written out here (a dozen fields of onnx.proto) rather than with the onnx package, whose import
# would cost a server 0.2 s and 10 MB for one operator. tests/test_int8_rows.py checks it with onnx.

_UINT8, _INT8, _INT32 = 2, 3, 6


def _product_graph(codes: np.ndarray) -> bytes:
    """levels (uint8, 2 x dim) -> products (int32, 2 x rows): MatMulInteger(levels, codes.T, 128).
    The codes' bytes are copied once, into the result (they are most of it)."""
    rows, dim = codes.shape
    raw = np.ascontiguousarray(codes.T).data.cast("B")
    node = _strings(1, "levels", "codes", "zero") + _strings(2, "products") + _strings(4, "MatMulInteger")
    codes_head = b"".join(_varint_field(1, d) for d in (dim, rows)) + _varint_field(2, _INT8) + _strings(8, "codes")
    codes_tensor = [codes_head, _varint(9 << 3 | 2) + _varint(len(raw)), raw]
    before = (
        _message(1, node)
        + _strings(2, "int8_rows")
        + _varint(5 << 3 | 2)
        + _varint(sum(len(part) for part in codes_tensor))
    )
    after = (
        _message(5, _tensor("zero", _UINT8, (), bytes([QUERY_ZERO])))
        + _message(11, _value("levels", _UINT8, (2, dim)))
        + _message(12, _value("products", _INT32, (2, rows)))
    )
    graph = [before, *codes_tensor, after]
    opset = _strings(1, "") + _varint_field(2, 17)
    head = _varint_field(1, 8) + _varint(7 << 3 | 2) + _varint(sum(len(part) for part in graph))
    return b"".join([head, *graph, _message(8, opset)])


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _message(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _strings(number: int, *values: str) -> bytes:
    return b"".join(_message(number, value.encode()) for value in values)


def _tensor(name: str, data_type: int, dims: tuple[int, ...], raw: bytes) -> bytes:
    return (
        b"".join(_varint_field(1, d) for d in dims) + _varint_field(2, data_type) + _strings(8, name) + _message(9, raw)
    )


def _value(name: str, data_type: int, dims: tuple[int, ...]) -> bytes:
    shape = b"".join(_message(1, _varint_field(1, d)) for d in dims)
    tensor_type = _varint_field(1, data_type) + _message(2, shape)
    return _strings(1, name) + _message(2, _message(1, tensor_type))

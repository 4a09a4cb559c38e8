"""A shortlist for ranking a large scope's Memory vectors (``vector_inprocess.rank_memory``).

Ranking every row exactly reads the whole float32 matrix per query: 150 MB at 100,000 entries,
~15 ms on this project's machine, memory-bound. Above ``POWERCONTEXT_VECTOR_EXACT_ROWS`` rows, a
scope's rows also carry a sign code (one bit per dimension: above or below the scope's centre,
48 bytes a row), the query is coded the same way, the rows nearest in Hamming distance form the
shortlist, and only those are ranked by exact cosine (docs/retrieval.md, "Large scopes").

The shortlist is a function of the scope's rows and the query alone, so every process answers
alike whatever its cache has seen: the centre comes from an exact integer sum of the rows
(order-free), rounded to 1/64; the shortlist holds every row at most as far as its
``depth``-th nearest, ties included, whatever order the rows are held in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np

SUM_UNIT = 4096  # a coordinate counts in the centre's sum rounded to 1/4096: integers sum exactly
CENTRE_STEP = 64  # the centre is rounded to 1/64, so one write seldom moves it (codes then stay)
MIN_DEPTH = 4096  # rows kept for the exact cosine, at least...
DEPTH_SHARE = 25  # ...and one in 25 of the scope's rows
_CHUNK_ROWS = 8192  # rows converted or compared at a time (bounds the temporary arrays)
# Shortlisted rows gathered for their cosines at a time: 256 x 384 float32 is 384 KiB. A query
# allocates nothing larger than a block and one small array per row (the distances, the
# scores): a whole shortlist gathered at once (~6 MiB at 100,000 rows) stayed in each serving
# thread's allocator arena after the request (measured: docs/benchmarks.md, "Large scopes").
_GATHER_ROWS = 256


@dataclass(frozen=True)
class Codes:
    """A scope's sign codes, row for row with its matrix."""

    total: np.ndarray[Any, np.dtype[np.int64]]  # the rows' sum, in units of 1/SUM_UNIT
    centre: np.ndarray[Any, np.dtype[np.float32]]
    bits: np.ndarray[Any, np.dtype[np.uint64]]  # (rows, words)

    @property
    def nbytes(self) -> int:
        return int(self.total.nbytes + self.centre.nbytes + self.bits.nbytes)


def _chunks(matrix: np.ndarray[Any, Any]) -> Any:
    for start in range(0, len(matrix), _CHUNK_ROWS):
        yield matrix[start : start + _CHUNK_ROWS]


def _quantized_sum(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
    # Whole numbers below 2**53 add exactly in float64 in any order: |coordinate| <= 1, so a
    # chunk's column sums stay below 2**12 * _CHUNK_ROWS, and the total below 2**53 up to 2**41 rows.
    total = np.zeros(matrix.shape[1], dtype=np.int64)
    for chunk in _chunks(matrix):
        total += np.rint(chunk * np.float32(SUM_UNIT)).sum(axis=0, dtype=np.float64).astype(np.int64)
    return total


def _centre(total: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    mean = total.astype(np.float64) / (SUM_UNIT * max(count, 1))
    centre: np.ndarray[Any, np.dtype[np.float32]] = (np.round(mean * CENTRE_STEP) / CENTRE_STEP).astype(
        np.float32
    )
    return centre


def code_bytes(dimensions: int) -> int:
    """A row's code, in bytes: one bit per dimension in whole 64-bit words."""
    return -(-dimensions // 64) * 8


def sign_bits(
    matrix: np.ndarray[Any, Any], centre: np.ndarray[Any, Any]
) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """Each row's bits (1: the coordinate is above the centre), packed into 64-bit words."""
    vectors = np.atleast_2d(matrix)
    bits = np.zeros((len(vectors), code_bytes(vectors.shape[1])), dtype=np.uint8)
    start = 0
    for chunk in _chunks(vectors):
        packed = np.packbits(chunk > centre, axis=1)
        bits[start : start + len(chunk), : packed.shape[1]] = packed
        start += len(chunk)
    return bits.view(np.uint64)


def build(matrix: np.ndarray[Any, Any]) -> Codes:
    """The codes of a whole matrix."""
    total = _quantized_sum(matrix)
    centre = _centre(total, len(matrix))
    return Codes(total, centre, sign_bits(matrix, centre))


def _moved(
    codes: Codes, gone: np.ndarray[Any, Any], added: np.ndarray[Any, Any], rows: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, np.dtype[np.float32]]]:
    """The sum and centre of ``rows`` rows: ``codes``' rows without ``gone``, with ``added``."""
    total = codes.total - _quantized_sum(gone) + _quantized_sum(added)
    return total, _centre(total, rows)


def update(
    codes: Codes, keep: np.ndarray[Any, Any], gone: np.ndarray[Any, Any], matrix: np.ndarray[Any, Any]
) -> Codes:
    """The codes of ``matrix`` (the old rows ``keep`` selects, then the rows added) from the old
    rows' ``codes`` (``gone``: the old rows ``keep`` leaves out): what ``build(matrix)`` gives,
    with only the added rows coded unless the rounded centre moved."""
    kept = int(np.count_nonzero(keep))
    added = matrix[kept:]
    total, centre = _moved(codes, gone, added, len(matrix))
    if not np.array_equal(centre, codes.centre):
        return Codes(total, centre, sign_bits(matrix, centre))
    return Codes(total, centre, np.concatenate([codes.bits[keep], sign_bits(added, centre)]))


def appended(
    codes: Codes,
    gone: np.ndarray[Any, Any],
    matrix: np.ndarray[Any, Any],
    start: int,
    rows: int,
    room: np.ndarray[Any, np.dtype[np.uint64]],
) -> tuple[Codes, np.ndarray[Any, np.dtype[np.uint64]]]:
    """The codes of ``matrix``, whose rows from ``start`` on were just added to the rows
    ``codes`` covers, and whose ``gone`` rows left (they stay in place, marked by the caller, and
    are never shortlisted); ``rows``: how many rows count. ``room``: the buffer ``codes.bits``
    views, with room past ``start``. Only the added rows are coded, into ``room``, unless the
    rounded centre moved: then every row is, into a new buffer of the same size. Returns the
    codes and their buffer."""
    added = matrix[start:]
    total, centre = _moved(codes, gone, added, rows)
    if np.array_equal(centre, codes.centre):
        room[start : len(matrix)] = sign_bits(added, centre)
    else:
        room = np.empty_like(room)
        room[: len(matrix)] = sign_bits(matrix, centre)
    return Codes(total, centre, room[: len(matrix)]), room


def depth_for(rows: int) -> int:
    """How many rows a query's exact cosine is computed for."""
    return max(MIN_DEPTH, rows // DEPTH_SHARE)


def shortlist(
    codes: Codes,
    query_vector: np.ndarray[Any, Any],
    depth: int,
    dead: np.ndarray[Any, np.dtype[np.bool_]] | None = None,
) -> np.ndarray[Any, Any]:
    """Row positions of every row whose code is at most as far from the query's as the
    ``depth``-th nearest (all rows when there are no more than ``depth``), ascending; rows
    ``dead`` marks are not rows (never kept, never counted)."""
    live = len(codes.bits) - (int(np.count_nonzero(dead)) if dead is not None else 0)
    if live <= depth:
        return np.arange(len(codes.bits)) if dead is None else np.flatnonzero(~dead)
    query_code = sign_bits(query_vector, codes.centre)[0]
    distance = np.empty(len(codes.bits), dtype=np.uint16)
    for start in range(0, len(codes.bits), _CHUNK_ROWS):
        differing = np.bitwise_count(codes.bits[start : start + _CHUNK_ROWS] ^ query_code)
        block = distance[start : start + len(differing)]
        block[:] = differing[:, 0]
        for word in range(1, differing.shape[1]):  # column by column: twice as fast as a row sum
            block += differing[:, word]
    if dead is not None:
        distance[dead] = np.iinfo(np.uint16).max  # farther than any code can be
    cut = np.partition(distance, depth - 1)[depth - 1]
    rows: np.ndarray[Any, Any] = np.flatnonzero(distance <= cut)
    return rows


def cosines(
    matrix: np.ndarray[Any, np.dtype[np.float32]],
    rows: np.ndarray[Any, Any],
    query_vector: np.ndarray[Any, Any],
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The query's cosine with each of ``rows`` of ``matrix`` (unit rows), in ``rows`` order,
    gathered ``_GATHER_ROWS`` at a time."""
    scores = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), _GATHER_ROWS):
        block = rows[start : start + _GATHER_ROWS]
        scores[start : start + len(block)] = matrix[block] @ query_vector
    return scores

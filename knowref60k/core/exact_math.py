"""Matrix products whose results are the same on every processor, exactly.

A BLAS product sums in an order its kernel chooses (block sizes, vector width, fused multiply-add or
not), and OpenBLAS and BLIS choose their kernel by processor: the same float32 product differs in its
last bits from one machine to the next, and a validity score built on such products moved by 0.004 when
one of those bits put a feature on the other side of a tree's split. Summing in float64 only makes such
differences rarer.

Here every sum is exact, so its order cannot matter. Each row of the left operand is rounded to
`bits` significant bits below its largest element's magnitude, and each column of the right one alike
(block floating point): every element is then an integer times a power of two shared by its row (or
column), each product an integer below 2^(2 bits) times the row's and column's powers, and with
2 bits + log2(inner size) <= 53 every partial sum of a row-column pair is an integer below 2^53 in
that unit, exactly representable in float64. Any kernel, any summation order, with or without fused
multiply-add, on any number of threads, gives the same float64, rounded once to the dtype asked for.
The rounding keeps 21 to 26 significant bits of the largest element in each row or column (float32 has
24), so the products are as precise as float32 ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

Array = NDArray[Any]

FLOAT64_BITS = 53
MAX_BITS = 26


def exact_bits(inner: int) -> int:
    """The significant bits per element that keep every partial sum of `inner` products exact."""
    return min(MAX_BITS, (FLOAT64_BITS - max(1, math.ceil(math.log2(max(inner, 2))))) // 2)


def blocked(array: Array, axis: int, bits: int) -> Array:
    """`array` as float64, each slice along `axis` rounded to `bits` significant bits below the largest
    magnitude in it (a slice of zeros stays zero)."""
    values: Array = np.array(array, dtype=np.float64)  # a copy, rounded in place
    largest = np.max(np.abs(values), axis=axis, keepdims=True)
    _, exponent = np.frexp(largest)  # largest < 2 ** exponent
    # Scaling by a power of two is exact, so multiplying by the unit's inverse is dividing by the unit.
    values *= np.ldexp(1.0, bits - exponent)
    np.rint(values, out=values)
    values *= np.ldexp(1.0, exponent - bits)
    return values


def prepared(matrix: Array) -> Array:
    """A right operand rounded once (as `product` rounds it), for weights used in many products."""
    return np.ascontiguousarray(blocked(matrix, -2, exact_bits(matrix.shape[-2])))


def product(
    left: Array,
    right: Array,
    dtype: DTypeLike = np.float32,
    out: Array | None = None,
    right_prepared: bool = False,
) -> Array:
    """`left @ right` (numpy's matmul, batched alike) computed exactly on the operands rounded to block
    floating point, then rounded once to `dtype` (or written into `out`). `right_prepared`: `right` came
    from `prepared` (rounding it again would change nothing, and costs time)."""
    rows = blocked(left, -1, exact_bits(left.shape[-1]))
    columns = right if right_prepared else blocked(right, -2, exact_bits(right.shape[-2]))
    exact: Array = np.matmul(rows, columns)
    if out is None:
        return exact.astype(dtype)
    out[...] = exact
    return out


def logistic(values: Array) -> Array:
    """1 / (1 + e^-x) of each value with the C library's `exp`: numpy's float64 `exp` has code of its own
    for AVX-512, which rounds differently from the code it runs elsewhere."""
    return np.array([_logistic(float(value)) for value in np.asarray(values, dtype=np.float64).ravel()])


def _logistic(value: float) -> float:
    if value < 0:  # e^-x would overflow for large negative x
        small = math.exp(value)
        return small / (1.0 + small)
    return 1.0 / (1.0 + math.exp(-value))

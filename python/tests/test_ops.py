"""Contract ops by name with keyword attributes, checked against NumPy."""

import numpy as np
import pytest

import polychip

F64_EPS = np.finfo(np.float64).eps


def gemm_error_bound(a, b, alpha):
    """Forward error bound of a K-term dot product: gamma_K * |alpha| * |a| @ |b|."""
    k = a.shape[1]
    return 1.01 * k * F64_EPS * abs(alpha) * (np.abs(a) @ np.abs(b)) + 4 * F64_EPS


def test_gemm_with_attributes_matches_numpy():
    rng = np.random.default_rng(12)
    a, b, c = rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    y = polychip.empty([3, 4], dtype="f64")
    polychip.call("gemm", polychip.tensor(a), polychip.tensor(b), polychip.tensor(c), y,
                  alpha=2.0, beta=0.5)
    expected = 2.0 * a @ b + 0.5 * c
    bound = gemm_error_bound(a, b, 2.0) + 0.5 * np.abs(c) * F64_EPS
    assert np.all(np.abs(y.numpy() - expected) <= bound)


def test_integer_attribute_selects_the_transpose():
    rng = np.random.default_rng(13)
    a_t, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    y = polychip.empty([3, 4], dtype="f64")
    zeros = polychip.tensor(np.zeros((3, 4)))
    polychip.call("gemm", polychip.tensor(a_t), polychip.tensor(b), zeros, y, trans_a=1)
    assert np.all(np.abs(y.numpy() - a_t.T @ b) <= gemm_error_bound(a_t.T, b, 1.0))


def test_unnamed_attributes_keep_their_contract_defaults():
    out = polychip.empty([4])
    polychip.call("fill", out, value=2.5)
    np.testing.assert_array_equal(out.numpy(), np.full(4, 2.5, dtype=np.float32))


def test_ops_lists_the_contract():
    ops = {op["name"]: op for op in polychip.ops()}
    assert ops["gemm"]["inputs"] == ["a", "b", "c"]
    assert ops["gemm"]["outputs"] == ["y"]
    assert {a["name"] for a in ops["gemm"]["attributes"]} >= {"alpha", "beta", "trans_a"}


def expect_error(code, match, op, *args, **attrs):
    with pytest.raises(polychip.Error, match=match) as raised:
        polychip.call(op, *args, **attrs)
    assert raised.value.code == code
    assert match in raised.value.message


def test_unknown_op_is_not_found():
    x = polychip.empty([1])
    expect_error(polychip.StatusCode.NOT_FOUND, "no op 'matmul2'", "matmul2", x)


def test_unknown_attribute_names_the_legal_ones():
    x, y = polychip.empty([2]), polychip.empty([2])
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "relu has no attribute 'alpha'",
                 "relu", x, y, alpha=1.0)


def test_attribute_of_the_wrong_type_is_named():
    y = polychip.empty([2, 2])
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "'trans_a' takes a 64-bit integer, not 'yes'",
                 "gemm", y, y, y, y, trans_a="yes")
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "not 1180591620717411303424",
                 "gemm", y, y, y, y, trans_a=2**70)


def test_contract_violation_reaches_python_with_its_code():
    x, y = polychip.empty([2]), polychip.empty([3])
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "relu", "relu", x, y)
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "takes 2 tensors", "relu", x)


def test_non_tensor_argument_is_named():
    expect_error(polychip.StatusCode.INVALID_ARGUMENT, "argument 1 is a <class 'list'>",
                 "relu", polychip.empty([1]), [1.0])

"""tests/python/ir_ops/test_ops_arity.py — each op's declared input count agrees with its
reference implementation's signature. The importer checks every node against the
declared (min, max); an op registered with the (1, 1) default while taking two inputs
rejects every well-formed node of that op."""
import inspect

import tilecore.ir.ops as ops


def _signature_arity(reference):
    params = list(inspect.signature(reference).parameters.values())[1:]  # after attrs
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None  # variadic: any declared maximum fits
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return sum(p.default is p.empty for p in positional), len(positional)


def test_declared_inputs_match_the_reference_signature():
    wrong = []
    for schema in ops.list_ops():
        arity = _signature_arity(schema.reference)
        if arity is None:
            continue
        lo, hi = schema.inputs
        # The reference must accept every count the schema admits, and the schema must
        # admit the inputs the reference requires.
        if lo < arity[0] or (hi != -1 and hi > arity[1]) or (hi == -1) or hi < arity[0]:
            wrong.append(f"{schema.name}: declared {schema.inputs}, reference takes {arity}")
    assert not wrong, "\n".join(wrong)


def test_binary_ops_take_two_inputs():
    for name in ("Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "And", "BitShift"):
        assert ops.get_op(name).inputs == (2, 2), name

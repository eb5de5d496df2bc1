"""The Conv plan search passes over a plan whose matrix work alone could not beat the fastest
estimate so far (docs/compiler.md, Conv: `MatrixCommandCycles`). The plan chosen must be the
one pricing every plan chooses (the PassContext option ``compiler.price_every_plan``), and
fewer kernel pipelines must run. The shapes are ResNet-50's whose searches hold such plans:
blocks of channels too few for the four cores, and (int8, its weights in L2) a plan whose L1
shrank its chunks to 16 input channels, 64 small mms an item."""
import pytest

from tilecore import compiler, transform
from tilecore.compiler import _ffi as compiler_ffi

pytestmark = pytest.mark.npu

INT8 = {"tc_precision": "int8", "tc_x_scale": 0.072, "tc_x_zero_point": -128, "tc_y_scale": 0.0775,
        "tc_y_zero_point": 0}
CASES = {
    "f32 3x3 stride 2": ({"pads": [1, 1, 1, 1], "strides": [2, 2]},
                         [((1, 256, 28, 28), "float32"), ((256, 256, 3, 3), "float32"), ((256,), "float32")],
                         ((1, 256, 14, 14), "float32")),
    "f32 1x1 of 1024 channels": ({}, [((1, 1024, 14, 14), "float32"), ((256, 1024, 1, 1), "float32")],
                                 ((1, 256, 14, 14), "float32")),
    "int8 1x1 stride 2, x and y in L2": (
        dict(INT8, strides=[2, 2], tc_in_l2=[0, 4]),
        [((1, 1024, 14, 14), "int8"), ((2048, 1024, 1, 1), "int8"), ((2048,), "int32"), ((2048,), "float32")],
        ((1, 2048, 7, 7), "int8")),
}


def lower(attrs, ins, out, every):
    """The Conv's PrimFunc as text and how many kernel pipelines its search ran."""
    compiler_ffi.ForgetPlanChoices()  # (a plan chosen before would skip the search)
    timing = transform.PassTimingInstrument()
    config = {"compiler.price_every_plan": True} if every else {}
    with transform.PassContext(opt_level=2, config=config, instruments=[timing]):
        f = compiler.LowerOp("Conv", {"kernel_shape": list(ins[1][0][2:]), **attrs},
                             [compiler.TensorSpec(*s) for s in ins], [compiler.TensorSpec(*out)], "npu -cores=4")
    runs = transform.render_pass_timing(timing).count("DefaultKernelPipeline")
    return str(f), runs


@pytest.mark.parametrize("case", list(CASES))
def test_the_plan_passed_over_unpriced_is_never_the_one_chosen(case):
    attrs, ins, out = CASES[case]
    every, every_runs = lower(attrs, ins, out, True)
    bounded, bounded_runs = lower(attrs, ins, out, False)
    assert bounded == every
    assert bounded_runs < every_runs



def estimate_after(first_l2, l2, every=False):
    """The estimate of the plan a 1x1 int8 Conv (GoogLeNet's inception3b 1x1, 256 -> 128
    channels at 28 x 28) chooses with its tensors `l2` in L2, lowered after the same Conv
    with `first_l2` (None: alone, a search of its own)."""
    ins = [((1, 256, 28, 28), "int8"), ((128, 256, 1, 1), "int8"), ((128,), "int32"), ((128,), "float32")]
    attrs = dict(INT8, kernel_shape=[1, 1], tc_activation="Relu")
    specs, out = [compiler.TensorSpec(*s) for s in ins], [compiler.TensorSpec((1, 128, 28, 28), "int8")]
    compiler_ffi.ForgetPlanChoices()
    config = {"compiler.price_every_plan": True} if every else {}
    with transform.PassContext(opt_level=2, config=config):
        if first_l2 is not None:
            compiler.LowerOp("Conv", dict(attrs, tc_in_l2=first_l2), specs, out, "npu -cores=4")
        f = compiler.LowerOp("Conv", dict(attrs, tc_in_l2=l2), specs, out, "npu -cores=4")
    return compiler.estimate_cost(f)["cycles"]


def test_a_sibling_prices_the_plans_whose_channel_major_shares_led_the_ranking():
    """The ranking a sibling search reads lists plans, not their shares of channel-major
    items: six shares of the fastest transposed plans, ranked on their own, left none of the
    plain plans among the first eight, and the Conv with only its input in L2 fell back to
    the implicit GEMM (8,839 estimated cycles against 6,244)."""
    alone = estimate_after(None, [0])
    assert estimate_after([0, 4], [0]) <= alone
    assert alone == estimate_after(None, [0], every=True)


def residual_search(zero_points):
    """ResNet-50's layer1 expansion (1x1, 64 -> 256 channels at 56 x 56, int8, an int8
    residual and the Relu, its input, output and residual in L2) lowered with each residual
    zero point of ``zero_points`` in turn: the last one's estimate and the kernel pipelines its
    search ran."""
    ins = [((1, 64, 56, 56), "int8"), ((256, 64, 1, 1), "int8"), ((256,), "int32"), ((256,), "float32"),
           ((1, 256, 56, 56), "int8")]
    specs, out = [compiler.TensorSpec(*s) for s in ins], [compiler.TensorSpec((1, 256, 56, 56), "int8")]
    compiler_ffi.ForgetPlanChoices()
    for zp in zero_points:
        attrs = dict(INT8, kernel_shape=[1, 1], tc_activation="Relu", tc_residual=1, tc_residual_scale=0.04,
                     tc_residual_zero_point=zp, tc_in_l2=[0, 4, 5])
        timing = transform.PassTimingInstrument()
        with transform.PassContext(opt_level=2, instruments=[timing]):
            f = compiler.LowerOp("Conv", attrs, specs, out, "npu -cores=4")
    return compiler.estimate_cost(f)["cycles"], transform.render_pass_timing(timing).count("DefaultKernelPipeline")


def test_a_conv_whose_zero_point_is_0_reads_its_siblings_ranking():
    """ResNet's first residual of a stage has zero point 0, the others -128: a subtraction an
    element apart, the same plans. The second search prices its sibling's first plans, fewer
    pipelines, and chooses a plan as fast as its own full search does."""
    alone, alone_runs = residual_search([0])
    after, after_runs = residual_search([-128, 0])
    assert after_runs < alone_runs
    assert after <= alone

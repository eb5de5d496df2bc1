"""NonMaxSuppression on the host against ONNX Runtime: random overlapping boxes, several
batches and classes, both box formats, with and without a score threshold. The output
length is static in tilecore: the model declares the one ONNX Runtime finds."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tilecore  # noqa: E402


def model(B, N, C, rows, center, max_out, iou, score_th):
    inits = [numpy_helper.from_array(np.array([max_out], np.int64), "m"),
             numpy_helper.from_array(np.array([iou], np.float32), "iou")]
    names = ["boxes", "scores", "m", "iou"]
    if score_th is not None:
        inits.append(numpy_helper.from_array(np.array([score_th], np.float32), "st"))
        names.append("st")
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=int(center))
    g = helper.make_graph([node], "nms", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [B, N, 4]),
                                          helper.make_tensor_value_info("scores", TensorProto.FLOAT, [B, C, N])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [rows, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("center,score_th", [(False, None), (False, 0.3), (True, 0.1)])
def test_nms_matches_onnxruntime(center, score_th):
    rng = np.random.default_rng(3)
    B, N, C = 2, 12, 3
    xy = rng.uniform(0, 4, (B, N, 2))
    wh = rng.uniform(0.5, 2.5, (B, N, 2))
    if center:
        boxes = np.concatenate([xy, wh], -1)
    else:  # [y1, x1, y2, x2], some flipped
        boxes = np.concatenate([xy, xy + wh], -1)[..., [1, 0, 3, 2]]
        boxes[:, ::3] = boxes[:, ::3][..., [2, 3, 0, 1]]
    boxes = boxes.astype(np.float32)
    scores = rng.random((B, C, N)).astype(np.float32)
    feed = {"boxes": boxes, "scores": scores}
    m = model(B, N, C, None, center, 4, 0.4, score_th)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    got = tilecore.compile(model(B, N, C, len(want), center, 4, 0.4, score_th)).run(feed)["y"]
    np.testing.assert_array_equal(got, want)

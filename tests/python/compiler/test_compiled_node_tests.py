"""A slice of the ONNX backend node tests compiled and run by tilecore, through the runner of
benchmarks/compiled_node_tests.py (tilecore.compiler.conformance): one case or two per op
type, npu strategies, host kernels, free views and expanded function bodies, each compared
with the case's expected outputs (and ONNX Runtime must pass it too)."""
import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tilecore.compiler import conformance  # noqa: E402

CASES = [
    # element-wise (npu where float32, host otherwise)
    "test_abs", "test_add", "test_add_bcast", "test_sub_example", "test_mul_example", "test_div", "test_pow_bcast_array",
    "test_max_int32", "test_mean_one_input", "test_min_one_input", "test_sum_one_input", "test_mod_float32_mixed_sign_fmod_0",
    "test_and2d", "test_or4d", "test_xor4d", "test_not_2d", "test_bitshift_left_int8", "test_bitwise_and_ui64_bcast_3v1d",
    "test_bitwise_not_3d", "test_equal", "test_greater", "test_greater_equal", "test_less_bcast", "test_less_equal",
    "test_where_example", "test_isinf", "test_isnan", "test_sign", "test_ceil", "test_floor_example", "test_round",
    # activations and math
    "test_relu", "test_leakyrelu", "test_prelu_example", "test_elu", "test_selu", "test_celu", "test_sigmoid_example",
    "test_hardsigmoid", "test_hardswish", "test_softplus_example", "test_softsign", "test_thresholdedrelu_example",
    "test_gelu_default_2", "test_erf", "test_exp", "test_log", "test_sqrt", "test_reciprocal", "test_neg", "test_tanh",
    "test_clip_default_min", "test_mish", "test_swish", "test_sin_example", "test_cos", "test_acosh", "test_atanh_example",
    "test_atan", "test_asin_example", "test_tan", "test_shrink_soft", "test_bitshift_right_uint16", "test_mod_mixed_sign_int8",
    # matrix, convolution, pooling, normalisation
    "test_gemm_default_no_bias", "test_matmul_1d_3d", "test_conv_with_strides_padding", "test_convtranspose_autopad_same",
    "test_averagepool_2d_ceil_last_window_starts_on_pad", "test_maxpool_3d_dilations_use_ref_impl", "test_globalmaxpool",
    "test_globalaveragepool_precomputed", "test_lppool_2d_dilations", "test_batchnorm_example", "test_instancenorm_epsilon",
    "test_layer_normalization_3d_axis2_epsilon", "test_group_normalization_example", "test_rms_normalization_3d_axis0_epsilon",
    "test_l2normalization_axis_1", "test_softmax_negative_axis", "test_logsoftmax_axis_2", "test_hardmax_example",
    # reductions and scans
    "test_reduce_mean_keepdims_random", "test_reduce_max_negative_axes_keepdims_random", "test_reduce_sum_empty_set",
    "test_reduce_l2_do_not_keepdims_example", "test_reduce_log_sum_exp_empty_set", "test_reduce_prod_empty_set",
    "test_argmax_negative_axis_keepdims_random_select_last_index", "test_cumsum_2d_axis_0", "test_cumsum_2d_int32",
    "test_cumprod_1d_reverse_exclusive", "test_top_k_same_values_largest", "test_argmin_no_keepdims_example",
    # layout, indexing, shapes
    "test_reshape_allowzero_reordered", "test_flatten_axis3", "test_squeeze", "test_unsqueeze_negative_axes",
    "test_transpose_all_permutations_5", "test_concat_3d_axis_negative_2", "test_split_variable_parts_2d_opset18",
    "test_slice_default_steps", "test_constant_pad", "test_tile_precomputed", "test_expand_dim_unchanged",
    "test_depthtospace_example", "test_spacetodepth_dcr_mode_example", "test_resize_downsample_sizes_nearest",
    "test_upsample_nearest", "test_gather_negative_indices", "test_gather_elements_0", "test_gathernd_example_float32",
    "test_gather_elements_negative_indices", "test_eyelike_populate_off_main_diagonal",
    "test_scatter_elements_with_reduction_max", "test_scatternd_min", "test_onehot_with_axis", "test_triu_square",
    "test_range_int32_type_negative_delta", "test_shape_start_negative_1", "test_size_example",
    "test_constantofshape_float_ones", "test_constant", "test_identity", "test_cast_DOUBLE_to_FLOAT",
    "test_castlike_DOUBLE_to_FLOAT", "test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN",
    "test_cast_FLOAT8E5M2FNUZ_to_FLOAT16", "test_castlike_FLOAT_to_FLOAT8E5M2_expanded", "test_cast_e8m0_FLOAT_to_FLOAT8E8M0",
    "test_bitcast_float32_to_int32", "test_bitcast_uint16_to_int16", "test_dropout_default_old",
    "test_lstm_with_peepholes", "test_gru_bidirectional", "test_simple_rnn_reverse", "test_compress_1",
    "test_eyelike_populate_off_main_diagonal", "test_nonmaxsuppression_center_point_box_format",
    "test_col2im_5d", "test_lrn", "test_reversesequence_batch", "test_det_nd", "test_deform_conv_with_mask_bias", "test_shrink_soft", "test_convinteger_without_padding", "test_nllloss_NCd1_weight",
    # ops without kernels of their own, run as their ONNX function bodies
    "test_attention_4d_attn_mask_bool_4d", "test_sce_none", "test_rotary_embedding_no_position_ids_rotary_dim",
    "test_causal_conv_with_state_with_past_state", "test_attention_4d_expanded", "test_sce_mean_expanded",
    # operands read when the model runs (starts, pads, axis as graph inputs), Scan unrolled
    "test_slice_neg_steps", "test_edge_pad", "test_wrap_pad", "test_cumsum_1d_reverse_exclusive",
    "test_scan9_sum", "test_linear_attention_gated_delta", "test_linear_attention_decode_step_expanded",
    # compiled for a declared shape (checked when it runs), Ifs that fold, bodies for refused nodes
    "test_affine_grid_3d_align_corners", "test_hannwindow", "test_center_crop_pad_crop_and_pad",
    "test_reduce_l2_keep_dims_random_expanded", "test_mvn", "test_nonzero_example", "test_tensorscatter_circular",
    "test_tfidfvectorizer_tf_batch_uniandbigrams_skip5", "test_batchnorm_epsilon_training_mode",
    "test_training_dropout_zero_ratio_mask",
]


@pytest.fixture(scope="module")
def rows():
    by_name = {c.name: c for c in conformance.load_cases()}
    missing = [n for n in CASES if n not in by_name]
    assert not missing, f"cases not in this onnx package: {missing}"
    return {n: conformance.run_case(by_name[n]) for n in CASES}


def test_every_case_of_the_slice_passes(rows):
    bad = {n: f"{r['status']}: {r['reason']}" for n, r in rows.items() if r["status"] != "pass"}
    assert not bad, bad


@pytest.mark.npu
def test_the_slice_runs_on_both_the_npu_and_the_host(rows):
    places = [w for r in rows.values() for _, w in r["places"].values()]
    assert places.count("npu") >= 100 and places.count("host") >= 10
    npu_ops = {op for r in rows.values() for op, w in r["places"].values() if w == "npu"}
    assert {"Conv", "MatMul", "Softmax", "MaxPool", "Relu", "Transpose"} <= npu_ops
    # math without a TC1 instruction, bool logic, bit ops, int64 indices and outputs
    assert {"Sin", "Atan", "Floor", "And", "BitShift", "Mod", "Gather", "GatherElements", "ArgMin",
            "CumSum", "Shrink", "GatherND", "OneHot", "ScatterElements"} <= npu_ops  # (EyeLike folds: its input's type only)


def test_compile_time_inputs_are_bound_per_data_set():
    case = conformance.load_cases(r"^test_slice_default_steps$")[0]
    assert conformance.compile_time_inputs(case.model) == ["starts", "ends", "axes"]


def test_a_wrong_result_is_a_failure_with_its_max_error():
    why = conformance.compare(np.array([1.0, 2.0], np.float32), np.array([1.0, 2.5], np.float32), 1e-3, 1e-7)
    assert why is not None and "1 of 2" in why and "0.5" in why
    assert conformance.compare(np.array([1, 2]), np.array([1, 2]), 1e-3, 1e-7) is None
    assert "dtype" in conformance.compare(np.array([1.0], np.float32), np.array([1.0], np.float64), 1e-3, 1e-7)


def test_a_16bit_float_off_by_its_rounding_is_told_apart():
    # attention_4d_causal_fp16_expanded: 0.469 against the expected 0.4695 (float16 ulp there:
    # 2^-12), beyond rtol 1e-3; the exact result is 0.46919
    e = np.array([0.4695, 0.398, np.nan], np.float16)
    assert conformance.within_16bit_rounding(e, np.array([0.469, 0.3984, np.nan], np.float16))
    assert not conformance.within_16bit_rounding(e, np.array([0.468, 0.3984, np.nan], np.float16))
    assert not conformance.within_16bit_rounding(np.float32([0.5]), np.float32([0.5001]))

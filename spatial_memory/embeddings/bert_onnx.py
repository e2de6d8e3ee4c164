"""Build an ONNX graph of a BERT sentence encoder straight from its safetensors weights.

Building the graph ourselves (instead of exporting through torch) takes well under a
second and needs neither torch nor transformers, so the default model can be served by
onnxruntime from the very first start, offline.

The graph computes token embeddings -> BERT encoder -> attention-masked mean pooling;
the caller L2-normalizes. It mirrors sentence-transformers' Transformer + Pooling(mean)
for BertModel checkpoints with absolute position embeddings.

Weights are streamed one tensor at a time from the safetensors file into the graph's external
data file (`<graph>.data`), so the build holds one tensor, not several copies of all of them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import BinaryIO

import numpy as np

OPSET = 17
# Part of the cached graph's name (onnx_encoder.graph_path): bump it whenever the graph built
# from the same weights changes, so no server loads a graph of an older build.
GRAPH_VERSION = 2
# Tensors at least this big go to the external data file, each at an offset aligned to this
# (onnxruntime maps aligned external data instead of copying it).
EXTERNAL_MIN_BYTES = 1024
ALIGNMENT = 4096


def build_bert_mean_pooling_onnx(model_dir: Path, output_path: Path) -> None:
    """Write an ONNX model with inputs input_ids/attention_mask (int64, [batch, seq]) and output
    `pooled` (float32, [batch, hidden]) to `output_path`, its weights to `output_path`.data."""
    import onnx
    from safetensors import safe_open

    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"unsupported architecture in {model_dir}")
    output_path.parent.mkdir(parents=True, exist_ok=True)
    data_path = output_path.with_name(output_path.name + ".data")
    with safe_open(str(model_dir / "model.safetensors"), framework="numpy") as weights, data_path.open("wb") as data:
        model = _bert_graph(config, weights, data, data_path.name)
    onnx.save_model(model, str(output_path))
    onnx.checker.check_model(str(output_path))  # by path: the external data is checked beside it


def _bert_graph(config: dict, weights, data: BinaryIO, data_name: str):
    """The graph's ModelProto; tensors of EXTERNAL_MIN_BYTES or more are appended to `data`
    (the file named `data_name` beside the graph) and referenced from it."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in set(weights.keys()) else ""

    inits: list = []
    nodes: list = []

    def const(name: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        if array.nbytes < EXTERNAL_MIN_BYTES:
            inits.append(numpy_helper.from_array(array, name))
            return name
        end = data.tell()
        offset = end + -end % ALIGNMENT
        data.seek(offset)
        data.write(memoryview(array).cast("B"))
        tensor = TensorProto(
            name=name,
            data_type=helper.np_dtype_to_tensor_dtype(array.dtype),
            dims=array.shape,
            data_location=TensorProto.EXTERNAL,
        )
        for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        inits.append(tensor)
        return name

    def weight(key: str, transpose: bool = False) -> str:
        array = weights.get_tensor(prefix + key).astype(np.float32, copy=False)
        return const(key + (".T" if transpose else ""), array.T if transpose else array)

    counter = iter(range(1_000_000))

    def node(op: str, inputs: list[str], **attrs) -> str:
        out = f"{op.lower()}_{next(counter)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x: str, key: str) -> str:
        return node("Add", [node("MatMul", [x, weight(key + ".weight", transpose=True)]), weight(key + ".bias")])

    def layer_norm(x: str, key: str) -> str:
        return node(
            "LayerNormalization",
            [x, weight(key + ".weight"), weight(key + ".bias")],
            axis=-1,
            epsilon=eps,
        )

    # Embeddings: word + absolute position + token type 0.
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const("one_idx", np.array([1], dtype=np.int64))], axis=0)
    positions = node(
        "Slice",
        [
            weight("embeddings.position_embeddings.weight"),
            const("zero_start", np.array([0], dtype=np.int64)),
            seq_len,
            const("axis0", np.array([0], dtype=np.int64)),
        ],
    )
    token_types = weights.get_tensor(prefix + "embeddings.token_type_embeddings.weight")
    token_type = const("token_type0", token_types[0].astype(np.float32))
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], axis=0)
    x = node("Add", [node("Add", [words, positions]), token_type])
    x = layer_norm(x, "embeddings.LayerNorm")

    one = const("one", np.array(1.0, dtype=np.float32))
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    # Padding keys get the most negative float so softmax gives them exactly zero weight.
    additive_mask = node(
        "Mul",
        [
            node("Sub", [one, mask]),
            const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32)),
        ],
    )
    additive_mask = node("Unsqueeze", [additive_mask, const("axes12", np.array([1, 2], dtype=np.int64))])

    split_heads = const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        q = node(
            "Transpose", [node("Reshape", [linear(x, p + "attention.self.query"), split_heads])], perm=[0, 2, 1, 3]
        )
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key"), split_heads])], perm=[0, 2, 3, 1])
        v = node(
            "Transpose", [node("Reshape", [linear(x, p + "attention.self.value"), split_heads])], perm=[0, 2, 1, 3]
        )
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), additive_mask])
        probs = node("Softmax", [scores], axis=-1)
        context = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(
            node("Add", [x, linear(context, p + "attention.output.dense")]), p + "attention.output.LayerNorm"
        )
        h = linear(x, p + "intermediate.dense")
        # Exact (erf) GELU, as BERT uses; onnxruntime fuses this pattern.
        erf = node("Erf", [node("Div", [h, sqrt2])])
        h = node("Mul", [node("Mul", [h, node("Add", [erf, one])]), half])
        x = layer_norm(node("Add", [x, linear(h, p + "output.dense")]), p + "output.LayerNorm")

    mask3 = node("Unsqueeze", [mask, const("axis2", np.array([2], dtype=np.int64))])
    summed = node("ReduceSum", [node("Mul", [x, mask3]), const("axis1", np.array([1], dtype=np.int64))], keepdims=0)
    counts = node(
        "Max",
        [
            node("ReduceSum", [mask3, const("axis1b", np.array([1], dtype=np.int64))], keepdims=0),
            const("min_count", np.array(1e-9, dtype=np.float32)),
        ],
    )
    nodes.append(helper.make_node("Div", [summed, counts], ["pooled"]))

    graph = helper.make_graph(
        nodes,
        "bert_mean_pooling",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="spatial-memory-mcp")
    model.ir_version = 8
    return model

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
# The int8 rows path's ranges (bert_onnx._BertGraph.int8_row_matmul).
INT8_WEIGHT_MAX = 63
INT8_ACTIVATION_MAX = 127
ALIGNMENT = 4096


def build_bert_mean_pooling_onnx(model_dir: Path, output_path: Path, *, int8_rows: bool = False) -> None:
    """Write an ONNX model with inputs input_ids/attention_mask (int64, [batch, seq]) and output
    `pooled` (float32, [batch, hidden]) to `output_path`, its weights to `output_path`.data
    (graph_build.py builds it in a scratch directory and moves it into place). With `int8_rows`,
    every linear layer multiplies in int8 with scales of its own token's row (see _BertGraph.linear)."""
    # onnx and safetensors only while a graph is built (once per install), never when one is loaded.
    import onnx
    from safetensors import safe_open

    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"unsupported architecture in {model_dir}")
    output_path.parent.mkdir(parents=True, exist_ok=True)
    data_path = output_path.with_name(output_path.name + ".data")
    with safe_open(str(model_dir / "model.safetensors"), framework="numpy") as weights, data_path.open("wb") as data:
        graph = _BertGraph(config, weights, data, data_path.name, int8_rows=int8_rows)
        x = graph.embeddings()
        mask, additive_mask = graph.attention_masks()
        for i in range(int(config["num_hidden_layers"])):
            x = graph.encoder_layer(x, f"encoder.layer.{i}.", additive_mask)
        model = graph.model(graph.mean_pooled(x, mask))
    onnx.save_model(model, str(output_path))
    onnx.checker.check_model(str(output_path))  # by path: the external data is checked beside it


class _BertGraph:
    """The ONNX nodes and initializers of one BERT model, built step by step from its weights
    (a safetensors handle, read a tensor at a time); tensors of EXTERNAL_MIN_BYTES or more are
    appended to `data`, the file named `data_name` beside the graph, and referenced from it."""

    def __init__(self, config: dict, weights, data: BinaryIO, data_name: str, *, int8_rows: bool = False) -> None:
        # onnx only while a graph is built (see build_bert_mean_pooling_onnx).
        from onnx import TensorProto, helper, numpy_helper

        self._tensor, self._helper, self._numpy_helper = TensorProto, helper, numpy_helper
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self._weights = weights
        self._data, self._data_name = data, data_name
        self._prefix = "bert." if "bert.embeddings.word_embeddings.weight" in set(weights.keys()) else ""
        self.inits: list = []
        self.nodes: list = []
        self._counter = iter(range(1_000_000))
        self.int8_rows = int8_rows

    def const(self, name: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        if array.nbytes < EXTERNAL_MIN_BYTES:
            self.inits.append(self._numpy_helper.from_array(array, name))
            return name
        end = self._data.tell()
        offset = end + -end % ALIGNMENT
        self._data.seek(offset)
        self._data.write(array.data.cast("B"))
        tensor = self._tensor(
            name=name,
            data_type=self._helper.np_dtype_to_tensor_dtype(array.dtype),
            dims=array.shape,
            data_location=self._tensor.EXTERNAL,
        )
        for key, value in (("location", self._data_name), ("offset", str(offset)), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.inits.append(tensor)
        return name

    def tensor(self, key: str) -> np.ndarray:
        return self._weights.get_tensor(self._prefix + key).astype(np.float32, copy=False)

    def weight(self, key: str, transpose: bool = False) -> str:
        array = self.tensor(key)
        return self.const(key + (".T" if transpose else ""), array.T if transpose else array)

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = f"{op.lower()}_{next(self._counter)}"
        self.nodes.append(self._helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(self, x: str, key: str) -> str:
        if self.int8_rows:
            return self.int8_linear(x, [key])
        return self.node(
            "Add", [self.node("MatMul", [x, self.weight(key + ".weight", transpose=True)]), self.weight(key + ".bias")]
        )

    def int8_linear(self, x: str, keys: list[str]) -> str:
        """x @ W.T + b in integers, for the layers `keys` side by side (one product for the query,
        key and value of a layer: their input is quantised once). W is int8 per output column, x
        uint8 per token row: each row's scale is its own largest magnitude, so a token's product
        never depends on the other rows, neither on the texts batched with it nor on padding.
        Products sum exactly in int32, then scale back. Weights keep to 7 bits (+-63) and
        activations to 8 around 128, so a pair of products stays within int16 on CPUs whose u8 x s8
        instruction saturates there (no VNNI): every CPU computes the same integers."""
        node, const = self.node, self.const
        weight = np.concatenate([self.tensor(k + ".weight") for k in keys])  # [out, in]
        bias = np.concatenate([self.tensor(k + ".bias") for k in keys])
        w_scale = np.maximum(np.abs(weight).max(axis=1), 1e-12) / INT8_WEIGHT_MAX
        w_q = np.rint(weight / w_scale[:, None]).astype(np.int8)
        if not hasattr(self, "_row_consts"):
            self._row_consts = (
                const("act_max", np.array(INT8_ACTIVATION_MAX, dtype=np.float32)),
                const("act_min_abs", np.array(1e-12, dtype=np.float32)),
                # Cast to uint8 truncates: + 0.5 makes it round half up around the zero point.
                const("act_offset", np.array(INT8_ACTIVATION_MAX + 1.5, dtype=np.float32)),
                const("act_zero_u8", np.array(INT8_ACTIVATION_MAX + 1, dtype=np.uint8)),
                const("one_over_act_max", np.array(1.0 / INT8_ACTIVATION_MAX, dtype=np.float32)),
            )
        act_max, min_abs, offset, zero_u8, inv_act_max = self._row_consts
        row_max = node("Max", [node("ReduceMax", [node("Abs", [x])], axes=[-1], keepdims=1), min_abs])
        q = node(
            "Cast", [node("Add", [node("Mul", [x, node("Div", [act_max, row_max])]), offset])], to=self._tensor.UINT8
        )
        name = keys[0] if len(keys) == 1 else keys[0].rsplit(".", 1)[0] + ".qkv"
        products = node("MatMulInteger", [q, const(name + ".int8.T", np.ascontiguousarray(w_q.T)), zero_u8])
        scaled = node("Mul", [node("Cast", [products], to=self._tensor.FLOAT), node("Mul", [row_max, inv_act_max])])
        scaled = node("Mul", [scaled, const(name + ".int8_scale", w_scale.astype(np.float32))])
        return node("Add", [scaled, const(name + ".bias", bias)])

    def layer_norm(self, x: str, key: str) -> str:
        return self.node(
            "LayerNormalization",
            [x, self.weight(key + ".weight"), self.weight(key + ".bias")],
            axis=-1,
            epsilon=self.eps,
        )

    def embeddings(self) -> str:
        """Word + absolute position + token type 0, normalised."""
        node, const, weight = self.node, self.const, self.weight
        seq_len = node(
            "Gather", [node("Shape", ["input_ids"]), const("one_idx", np.array([1], dtype=np.int64))], axis=0
        )
        positions = node(
            "Slice",
            [
                weight("embeddings.position_embeddings.weight"),
                const("zero_start", np.array([0], dtype=np.int64)),
                seq_len,
                const("axis0", np.array([0], dtype=np.int64)),
            ],
        )
        token_type = const("token_type0", self.tensor("embeddings.token_type_embeddings.weight")[0])
        words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], axis=0)
        x = node("Add", [node("Add", [words, positions]), token_type])
        return self.layer_norm(x, "embeddings.LayerNorm")

    def attention_masks(self) -> tuple[str, str]:
        """The mask as floats, and the additive mask the attention scores take; then the constants
        every layer shares."""
        node, const = self.node, self.const
        self.one = const("one", np.array(1.0, dtype=np.float32))
        mask = node("Cast", ["attention_mask"], to=self._tensor.FLOAT)
        # Padding keys get the most negative float so softmax gives them exactly zero weight.
        additive_mask = node(
            "Mul",
            [
                node("Sub", [self.one, mask]),
                const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32)),
            ],
        )
        additive_mask = node("Unsqueeze", [additive_mask, const("axes12", np.array([1, 2], dtype=np.int64))])
        self.split_heads = const("split_heads", np.array([0, 0, self.heads, self.head_dim], dtype=np.int64))
        self.merge_heads = const("merge_heads", np.array([0, 0, self.hidden], dtype=np.int64))
        if self.int8_rows:
            self.qkv_split = const("qkv_split", np.array([self.hidden] * 3, dtype=np.int64))
        self.scale = const("scale", np.array(1.0 / math.sqrt(self.head_dim), dtype=np.float32))
        self.sqrt2 = const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
        self.half = const("half", np.array(0.5, dtype=np.float32))
        return mask, additive_mask

    def encoder_layer(self, x: str, p: str, additive_mask: str) -> str:
        """Self-attention then the feed-forward block, each with its residual and layer norm."""
        node, linear, split = self.node, self.linear, self.split_heads
        projections = [p + f"attention.self.{name}" for name in ("query", "key", "value")]
        if self.int8_rows:
            qkv = self.int8_linear(x, projections)
            q, k, v = (f"{qkv}_{part}" for part in ("q", "k", "v"))
            self.nodes.append(self._helper.make_node("Split", [qkv, self.qkv_split], [q, k, v], axis=-1))
        else:
            q, k, v = (linear(x, key) for key in projections)
        q = node("Transpose", [node("Reshape", [q, split])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [k, split])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, split])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), self.scale]), additive_mask])
        probs = node("Softmax", [scores], axis=-1)
        context = node(
            "Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), self.merge_heads]
        )
        x = self.layer_norm(
            node("Add", [x, linear(context, p + "attention.output.dense")]), p + "attention.output.LayerNorm"
        )
        h = linear(x, p + "intermediate.dense")
        # Exact (erf) GELU, as BERT uses; onnxruntime fuses this pattern.
        erf = node("Erf", [node("Div", [h, self.sqrt2])])
        h = node("Mul", [node("Mul", [h, node("Add", [erf, self.one])]), self.half])
        return self.layer_norm(node("Add", [x, linear(h, p + "output.dense")]), p + "output.LayerNorm")

    def mean_pooled(self, x: str, mask: str) -> str:
        """The mean of the unmasked tokens' vectors, as the output `pooled`."""
        node, const = self.node, self.const
        mask3 = node("Unsqueeze", [mask, const("axis2", np.array([2], dtype=np.int64))])
        summed = node("ReduceSum", [node("Mul", [x, mask3]), const("axis1", np.array([1], dtype=np.int64))], keepdims=0)
        counts = node(
            "Max",
            [
                node("ReduceSum", [mask3, const("axis1b", np.array([1], dtype=np.int64))], keepdims=0),
                const("min_count", np.array(1e-9, dtype=np.float32)),
            ],
        )
        self.nodes.append(self._helper.make_node("Div", [summed, counts], ["pooled"]))
        return "pooled"

    def model(self, output: str):
        helper, tensor = self._helper, self._tensor
        graph = helper.make_graph(
            self.nodes,
            "bert_mean_pooling",
            [
                helper.make_tensor_value_info("input_ids", tensor.INT64, ["batch", "seq"]),
                helper.make_tensor_value_info("attention_mask", tensor.INT64, ["batch", "seq"]),
            ],
            [helper.make_tensor_value_info(output, tensor.FLOAT, ["batch", self.hidden])],
            initializer=self.inits,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="spatial-memory-mcp"
        )
        model.ir_version = 8
        return model

"""Per-row activation scales for ONNX Runtime's dynamic int8 graph, so a vector depends on its text only.

ORT's `quantize_dynamic` quantises each weight MatMul's input with `DynamicQuantizeLinear`: one scale and zero
point for the whole padded batch tensor, so the same text gets other numbers in another batch. This rewrite
replaces every `DynamicQuantizeLinear` by a symmetric per-row (per-token) quantiser with the same three
outputs: the scale is max|x| / 127 over the hidden axis (shape (batch, sequence, 1)) and the codes are int8
stored as uint8 around the constant zero point 128 (which keeps MLAS's fast u8 x s8 kernels). Each
`MatMulInteger -> Cast -> Mul(activation scale x weight scale)` becomes `MatMulIntegerToFloat` (weight scales
per output channel, activation scale 1) then a `Mul` by the row scale. A token's codes then depend on that
token's hidden state alone; the attention mask already keeps padding out of real tokens' states.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUANTIZER_OP = "DynamicQuantizeLinear"
MICROSOFT_DOMAIN = "com.microsoft"  # MatMulIntegerToFloat is an ONNX Runtime contrib op
MICROSOFT_OPSET = 1
INT8_LEVELS = 127.0  # symmetric int8: -127..127 (the -128 code is left unused, as symmetric schemes do)
UINT8_ZERO_POINT = 128  # int8 stored as uint8: q_u8 = q_s8 + 128
SCALE_FLOOR = 1e-12  # a row of zeros still gets a finite scale (its codes are all the zero point)
HIDDEN_AXIS = -1


class RowQuantizeError(RuntimeError):
    """The int8 graph does not have the shape ORT's dynamic quantiser writes; nothing was rewritten."""


@dataclass(frozen=True)
class Dequantization:
    """One quantised MatMul's tail in ORT's graph: `MatMulInteger -> Cast -> Mul(scales)`."""

    matmul: Any  # the MatMulInteger node
    cast: Any
    scales: Any  # Mul(activation scale, weight scale)
    output: Any  # Mul(cast output, scales): the float result the rest of the graph reads


class RowQuantizer:
    """Rewrites an ONNX int8 graph in place: per-tensor dynamic activation quantisation -> per row."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._constants: set[str] = set()

    def _constant(self, name: str, value: float | int, dtype: int) -> str:
        """A scalar initializer, made once per graph."""
        from onnx import helper

        if name not in self._constants:
            self.model.graph.initializer.append(helper.make_tensor(name, dtype, [], [value]))
            self._constants.add(name)
        return name

    def _per_row_quantizer(self, node: Any) -> list[Any]:
        """The nodes that compute `node`'s three outputs (codes, scale, zero point) per row."""
        from onnx import TensorProto, helper

        source = node.input[0]
        codes, scale, zero_point = node.output
        stem = f"{node.name or codes}/rows"
        levels = self._constant("rows/int8_levels", INT8_LEVELS, TensorProto.FLOAT)
        floor = self._constant("rows/scale_floor", SCALE_FLOOR, TensorProto.FLOAT)
        unit = self._constant("rows/unit_scale", 1.0, TensorProto.FLOAT)
        self.model.graph.initializer.append(helper.make_tensor(zero_point, TensorProto.UINT8, [], [UINT8_ZERO_POINT]))
        return [
            helper.make_node("Abs", [source], [f"{stem}/abs"], name=f"{stem}/Abs"),
            helper.make_node("ReduceMax", [f"{stem}/abs"], [f"{stem}/absmax"], name=f"{stem}/ReduceMax",
                             axes=[HIDDEN_AXIS], keepdims=1),
            helper.make_node("Max", [f"{stem}/absmax", floor], [f"{stem}/range"], name=f"{stem}/Max"),
            helper.make_node("Div", [f"{stem}/range", levels], [scale], name=f"{stem}/Scale"),
            helper.make_node("Div", [source, scale], [f"{stem}/scaled"], name=f"{stem}/Div"),
            # rounds half to even and saturates, like ONNX Round + Clip, in one pass
            helper.make_node("QuantizeLinear", [f"{stem}/scaled", unit, zero_point], [codes], name=f"{stem}/Quantize"),
        ]

    def _dequantization(self, node: Any, producers: dict[str, Any], row_scales: set[str]) -> Dequantization | None:
        """`node` as the last Mul of a quantised MatMul whose activation is now per row, else None."""
        if node.op_type != "Mul" or len(node.input) != 2:
            return None
        for accumulated, scales in (node.input, node.input[::-1]):
            cast, product = producers.get(accumulated), producers.get(scales)
            if cast is None or product is None or cast.op_type != "Cast" or product.op_type != "Mul":
                continue
            matmul = producers.get(cast.input[0])
            if matmul is not None and matmul.op_type == "MatMulInteger" and set(product.input) & row_scales:
                return Dequantization(matmul, cast, product, node)
        return None

    def _matmul_to_float(self, tail: Dequantization, row_scales: set[str]) -> list[Any]:
        """`MatMulIntegerToFloat` with the weight scales (activation scale 1), then the per-row scale. Not ORT's
        own MatMulInteger -> MatMulIntegerToFloat fusion: that one reads the activation scale as per-tensor (or per
        column of A) and silently corrupts a per-row scale, so the graph keeps the row scale out of it."""
        from onnx import TensorProto, helper

        row_scale = next(name for name in tail.scales.input if name in row_scales)
        weight_scale = next(name for name in tail.scales.input if name != row_scale)
        a, b, a_zero, b_zero = tail.matmul.input
        unit = self._constant("rows/unit_scale", 1.0, TensorProto.FLOAT)
        stem = f"{tail.matmul.name or tail.output.output[0]}/rows"
        return [helper.make_node("MatMulIntegerToFloat", [a, b, unit, weight_scale, a_zero, b_zero],
                                 [f"{stem}/per_channel"], name=f"{stem}/MatMulIntegerToFloat", domain=MICROSOFT_DOMAIN),
                helper.make_node("Mul", [f"{stem}/per_channel", row_scale], list(tail.output.output),
                                 name=f"{stem}/PerRow")]

    def rewrite(self) -> int:
        """Replace every per-tensor quantiser and its MatMuls' tails; returns how many quantisers there were."""
        from onnx import helper

        graph = self.model.graph
        nodes = list(graph.node)
        row_scales = {node.output[1] for node in nodes if node.op_type == QUANTIZER_OP}
        producers = {output: node for node in nodes for output in node.output}
        tails = [t for t in (self._dequantization(node, producers, row_scales) for node in nodes) if t is not None]
        matmuls = sum(1 for node in nodes if node.op_type == "MatMulInteger")
        if not row_scales or len(tails) != matmuls:
            raise RowQuantizeError(f"{len(row_scales)} dynamic quantisers and {len(tails)} of {matmuls} quantised "
                                   "MatMuls in ORT's form: not a graph this rewrite knows")
        folded = {id(part) for t in tails for part in (t.matmul, t.cast, t.scales)}
        by_output = {id(t.output): t for t in tails}
        rebuilt: list[Any] = []
        for node in nodes:
            if node.op_type == QUANTIZER_OP:
                rebuilt.extend(self._per_row_quantizer(node))
            elif id(node) in by_output:
                rebuilt.extend(self._matmul_to_float(by_output[id(node)], row_scales))
            elif id(node) not in folded:
                rebuilt.append(node)
        del graph.node[:]
        graph.node.extend(rebuilt)
        if not any(o.domain == MICROSOFT_DOMAIN for o in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid(MICROSOFT_DOMAIN, MICROSOFT_OPSET))
        return len(row_scales)


def quantize_rows(per_tensor_path: Path, out_path: Path) -> int:
    """Read ORT's dynamic int8 graph, write its per-row version; returns the quantisers replaced."""
    import onnx

    model = onnx.load(str(per_tensor_path))
    replaced = RowQuantizer(model).rewrite()
    onnx.save(model, str(out_path))
    return replaced

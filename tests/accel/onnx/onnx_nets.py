"""Small ONNX graphs built with onnx.helper for the import tests (random weights, fixed seed)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def lenet(batch="N", opset=17, seed=0):
    """Conv-Relu-MaxPool x2, then Shape/Gather/Concat/Reshape (dynamic batch) and two Gemms."""
    r = np.random.default_rng(seed)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = [_init("conv1.weight", w(4, 1, 3, 3)), _init("conv1.bias", w(4)),
             _init("conv2.weight", w(8, 4, 3, 3)), _init("conv2.bias", w(8)),
             _init("fc1.weight", w(16, 8 * 2 * 2)), _init("fc1.bias", w(16)),
             _init("fc2.weight", w(10, 16)), _init("fc2.bias", w(10)),
             _init("bn.scale", np.abs(w(8)) + 0.5), _init("bn.bias", w(8)), _init("bn.mean", w(8)),
             _init("bn.var", np.abs(w(8)) + 0.5),
             _init("zero", np.array([0], np.int64)), _init("minus1", np.array([-1], np.int64))]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2"),
        helper.make_node("BatchNormalization", ["c2", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b2"], name="bn"),
        helper.make_node("Relu", ["b2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p2"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Concat", ["n", "minus1"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["p2", "target"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="relu3"),
        helper.make_node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["y"], name="fc2", transB=1),
    ]
    g = helper.make_graph(nodes, "lenet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def single(op_type, inputs, outputs, inits=(), opset=17, **attrs):
    """A one-node graph: inputs/outputs are (name, elem_type, shape)."""
    g = helper.make_graph([helper.make_node(op_type, [i[0] for i in inputs] + [t.name for t in inits],
                                            [o[0] for o in outputs], name="the_node", **attrs)], "single",
                          [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort(model, *inputs):
    import onnxruntime
    s = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: a for i, a in zip(s.get_inputs(), inputs)})

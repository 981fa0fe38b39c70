"""Deploy an int8 image classifier on VTA (the counterpart of upstream's ``deploy_classification.py``).

The whole-network flow, from an ONNX file to classes on the simulated accelerator:

1. get a quantized ONNX model: the bundled digits CNN (default), or ResNet-18 built with
   ``onnx.helper`` from seeded random weights and quantized by onnxruntime (``--model resnet18``);
2. import it with ``relay.frontend.from_onnx`` (QDQ int8 operators become the graph's qnn ops);
3. build it with ``relay.build`` for ``env.target``: convolutions, dense layers, residual adds and
   max pooling become accelerator functions, the rest host kernels;
4. ``export_library`` the result into one ``.so``, upload it through an RPC session, load it and
   create the graph executor on the remote ``ext_dev``;
5. run it, time it with ``time_evaluator``, print the top-5 classes and the device statistics
   (cycles on the cycle model and tsim: ``VTA_CONFIG`` with ``"TARGET": "model"``).

Run with ``python examples/deploy_classification.py [--model digits|resnet18] [--images N]``.
Exits with status 1 if the accelerator's top-1 class differs from onnxruntime's on an image.
"""

import argparse
import sys

import numpy as np

import vta
from vta import tvm
from vta.tvm import relay, rpc
from vta.tvm.contrib import graph_executor, utils
from vta.testing import simulator


def get_model(name: str):
    """(quantized ModelProto, input name, images) for ``name``."""
    import onnx

    from vta.models import digits_model_path, load_digits_test, quantize, resnet18

    if name == "digits":
        x, _, _ = load_digits_test()
        return onnx.load(str(digits_model_path())), "input", x
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2, 1, 3, 224, 224)).astype(np.float32)
    calibration = rng.standard_normal((4, 3, 224, 224)).astype(np.float32)
    model = quantize(resnet18(seed=0), calibration, per_channel=True, quant_format="QDQ")
    return model, "data", images.reshape(2, 3, 224, 224)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("digits", "resnet18"), default="digits")
    ap.add_argument("--images", type=int, default=3, help="images to classify")
    args = ap.parse_args(argv)
    env = vta.get_env()

    # 1. the model (int8, QDQ, per-channel weights) and some images
    model, input_name, images = get_model(args.model)
    images = images[: args.images]
    shape_dict = {input_name: (1, *images.shape[1:])}

    # 2. import: (graph, params) as TVM's (mod, params)
    mod, params = relay.frontend.from_onnx(model, shape_dict)

    # 3. build for the accelerator
    with vta.build_config():
        lib = relay.build(mod, target=tvm.target.Target(env.target, host=env.target_host), params=params)

    # 4. export one library, upload it to the (simulated) board and load it there
    temp = utils.tempdir()
    lib.export_library(temp.relpath("graphlib.so"))
    remote = rpc.LocalSession()  # on a board: rpc.connect(host, port)
    remote.upload(temp.relpath("graphlib.so"))
    loaded = remote.load_module("graphlib.so")
    ctx = remote.ext_dev(0)
    m = graph_executor.GraphModule(loaded["default"](ctx))

    # 5. classify, compare with onnxruntime, time and count
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    agree = 0
    for i, x in enumerate(images):
        x = x[None].astype(np.float32)
        simulator.clear_stats()
        m.set_input(input_name, x)
        m.run()
        stats = simulator.stats()
        scores = m.get_output(0).numpy().reshape(-1)
        ref = sess.run(None, {input_name: x})[0].reshape(-1)
        top5 = np.argsort(-scores, kind="stable")[:5]
        agree += int(top5[0] == int(np.argmax(ref)))
        print(f"image {i}: top-5 classes {top5.tolist()} (onnxruntime top-1: {int(np.argmax(ref))})")
        cycles = stats.get("cycle_count")
        print(f"  {'cycles: ' + str(cycles) if cycles is not None else 'cycles: n/a on ' + env.TARGET}, "
              f"gemm_counter: {stats.get('gemm_counter')}, alu_counter: {stats.get('alu_counter')}")
    timer = m.module.time_evaluator("run", ctx, number=1, repeat=3)
    tcost = timer()
    print(f"inference wall time on {env.TARGET}: {tcost.mean * 1e3:.2f} ms "
          f"(std {np.std(tcost.results) * 1e3:.2f} ms over {len(tcost.results)} runs)")
    remote.close()
    ok = agree == len(images)
    print(("PASSED" if ok else "FAILED") + f": top-1 equals onnxruntime's on {agree} of {len(images)} images")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""ModelSpec: a named model travels as its name, and specs of one model share replicas."""

from functools import partial

from _eval_toys import toy_domain, toy_lm

from genlm_lab.eval import Method
from genlm_lab.eval.model_spec import ModelSpec

METHOD = Method(kind="smc", n_particles=2, max_tokens=3)


def test_a_named_model_is_keyed_by_its_name_backend_and_options():
    domain = toy_domain(["a+b"])
    a = ModelSpec.method(METHOD, domain, "tiny-random", backend="hf")
    b = ModelSpec.method(Method(kind="base", max_tokens=3), domain, "tiny-random", backend="hf")
    c = ModelSpec.method(METHOD, domain, "tiny-random", backend="hf", llm_opts={"x": 1})
    assert a.key == b.key != c.key  # another method reuses the replicas; other options do not
    assert a.load.args == ("tiny-random", "hf", None)


def test_a_model_function_is_loaded_then_adapted_to_the_method():
    domain = toy_domain(["a+b"])
    spec = ModelSpec.method(METHOD, domain, partial(toy_lm, 3), model_name="toy")
    assert spec.key is None  # the cluster keys it by what `load` pickles to
    lm = spec.load()
    adaptor = spec.adapt(lm)
    assert adaptor.model_identity()["name"] == "toy"


def test_an_adaptor_built_here_is_sent_as_it_is():
    adaptor = object()
    spec = ModelSpec.of(adaptor)
    assert spec.load() is adaptor and spec.adapt is None


def test_method_model_adapts_here_without_a_cluster_and_sends_a_spec_with_one():
    from genlm_lab.eval.methods import MethodAdaptor
    from genlm_lab.eval.model_spec import method_model

    domain, lm = toy_domain(["a+b"]), toy_lm(3)
    here = method_model(METHOD, domain, "toy", lm, "toy")
    assert isinstance(here, MethodAdaptor) and here.model_name == "toy"
    options = {"ours": False}
    spec = method_model(
        METHOD, domain, "json_schema", None, "tiny-random", cluster=object(), backend="hf",
        domain_options=options,
    )  # fmt: skip
    assert isinstance(spec, ModelSpec) and spec.load.args == ("tiny-random", "hf", None)
    assert spec.adapt.args[:2] == (METHOD, "json_schema") and spec.adapt.args[2] == options

"""A run's configuration round-trips through its identity (robeval.options.EvalConfig.to_identity /
from_identity): what the store keeps is read back into the same options, the one way resume, the
large-eps run, ``robeval examples`` and the column runs of ``robeval reproduce`` do it."""

from __future__ import annotations

import json

import pytest

from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.evaluation.config import make_config, remake
from robeval.evaluation.plan import make_plan, planned_identity
from robeval.evaluation.protocols import PROTOCOLS
from robeval.options import EvalConfig, newest_matching, option_default
from robeval.reproduce.column_runs import newest_matching_run
from robeval.store import Store

OPTIONS = dict(models=["digits-deit", "digits-deit-elliptical"], attacks="fgsm,pgd", eps="2/255,8/255",
               n_examples=12, settings={"pgd": {"steps": 3}}, seed=3)
SPREAD = [  # options a user may give, in the forms the command line and the API give them
    {},
    dict(models="digits-*", eps="1/255,0.01", attacks="all", settings=["pgd.steps=5", "spsa.samples=4"], seed=7),
    dict(models=["digits-deit"], norm="L2", eps="0.5", attacks="pgd,apgd-ce", cascade=True, batch_size=32),
    dict(attacks="transfer-pgd,fgsm", source_model="digits-deit-elliptical", precision="bf16", weights="random"),
    dict(shift="corruptions", corruptions="noise", severities="1,3", attacks="fgsm", channels_last=True),
    dict(data="cifar10", models="cifar10-vit", split="train", selection="first", n_examples=64, adaptive=True),
    dict(data="/data/imagenet/val", models="deit-small", subset="robustbench-5000", class_map="/maps/classes.txt",
         checkpoints=["deit-small=/ckpt/a.pth"], checkpoint_key="model_ema", strict_data=True),
    dict(attacks="fmn,pgd", eps="4/255,16/255", evidence_for="20260101-000000-000000", settings={"fgsm": {}}),
]


OWN_ATTACKS = ("attacks", "settings", "shift", "corruptions", "severities", "cascade", "source_model", "evidence_for")


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
@pytest.mark.parametrize("options", SPREAD, ids=range(len(SPREAD)))
def test_every_configuration_round_trips_through_its_identity(protocol, options):
    if protocol == "nielsen2024" and ("fmn" in str(options.get("attacks")) or options.get("source_model")):
        pytest.skip("the minimum-norm and transfer attacks need a pixel-space protocol")
    if PROTOCOLS[protocol].audit_stages:  # an audited protocol runs its own attacks, on the data, as its own cascade
        options = {k: v for k, v in options.items() if k not in OWN_ATTACKS}
    config = make_config(**options, protocol=protocol)
    identity = config.to_identity()
    assert json.loads(json.dumps(identity)) == identity  # plain JSON: what the store keeps
    assert EvalConfig.from_identity(identity) == config
    assert remake(config) == config  # judged again, the same configuration


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("stored") / "s.sqlite"
    result = evaluate_full(store=path, **OPTIONS)
    db = Store(path)
    try:
        yield path, result.run_id, db.run(result.run_id)["config"]
    finally:
        db.close()


def test_a_stored_run_round_trips(stored):
    _, _, identity = stored
    config = EvalConfig.from_identity(identity)
    assert config.to_identity() == identity and config.batch_size == 128 and config.settings["pgd"]["steps"] == 3
    assert make_plan(remake(config)).identity() == identity
    one = remake(config, ["digits-deit-elliptical"])
    assert one.models == ["digits-deit-elliptical"] and one.settings["pgd"]["steps"] == 3 and one.seed == 3


def test_changed_options_replace_the_stored_ones_and_the_rest_is_kept(stored):
    _, run_id, identity = stored
    large = remake(EvalConfig.from_identity(identity), settings=option_default("settings"), eps=["16/255"],
                   attacks=["pgd"], evidence_for=run_id)  # fmt: skip
    assert [e.text for e in large.eps] == ["16/255"] and large.attacks == ["pgd"] and large.evidence_for == run_id
    assert large.settings["pgd"]["steps"] == 20  # PGD's own steps again
    assert (large.models, large.n_examples, large.seed, large.data) == (OPTIONS["models"], 12, 3, identity["data"])


def test_a_configuration_this_robeval_cannot_give_back_is_one_line(stored):
    _, _, identity = stored
    with pytest.raises(UserError, match="cannot be rebuilt here: made_up"):
        EvalConfig.from_identity({**identity, "made_up": 1})
    gone = {**identity, "attack_settings": {**identity["attack_settings"], "pgd": {"steps": 3, "gone": 1}}}
    with pytest.raises(UserError, match="attack pgd has no setting 'gone'"):
        remake(EvalConfig.from_identity(gone))


def test_the_run_that_options_would_make_is_found_newest_first(stored):
    path, run_id, identity = stored
    assert planned_identity({**OPTIONS, "out": "ignored", "store": "ignored"}) == identity
    assert newest_matching([("newer", {**identity, "seed": 4}), (run_id, identity)], identity) == run_id
    assert newest_matching([("other", {**identity, "seed": 4})], identity) is None
    assert newest_matching_run(path, OPTIONS) == run_id  # reproduce --resume's column lookup
    assert newest_matching_run(path, {**OPTIONS, "seed": 4}) is None
    assert newest_matching_run(path.parent / "absent.sqlite", OPTIONS) is None


def test_a_model_of_the_users_code_round_trips_by_its_name(tmp_path, monkeypatch):
    """Its identity names it and its code; read back, the name is known by that code (nothing imported)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "net.py").write_text("def build():\n    raise AssertionError('not imported to judge options')\n")
    config = make_config(models=["./net.py:build=mine", "digits-deit"], attacks="fgsm")
    assert config.models == ["mine", "digits-deit"] and config.references == {"mine": "./net.py:build"}
    assert EvalConfig.from_identity(config.to_identity()) == config
    assert remake(config, ["mine"]).references == {"mine": "./net.py:build"}
    assert remake(config, ["digits-deit"]).references == {}

"""A stored run's configuration rebuilt from the store, and the stored run that options would make
(robeval.evaluation.stored_config): the one way resume, the large-eps run, ``robeval examples`` and the
column runs of ``robeval reproduce`` do it."""

from __future__ import annotations

import pytest

from robeval.api import evaluate_full
from robeval.errors import UserError
from robeval.evaluation.plan import make_plan
from robeval.evaluation.stored_config import newest_matching, rebuild_config, stored_identity
from robeval.reproduce.column_runs import newest_matching_run
from robeval.results.store import Store

OPTIONS = dict(models=["digits-deit", "digits-deit-elliptical"], attacks="fgsm,pgd", eps="2/255,8/255",
               n_examples=12, settings={"pgd": {"steps": 3}}, seed=3)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("stored") / "s.sqlite"
    result = evaluate_full(store=path, **OPTIONS)
    db = Store(path)
    try:
        yield path, result.run_id, db.run(result.run_id)["config"]
    finally:
        db.close()


def test_a_rebuilt_configuration_gives_the_stored_one_back(stored):
    _, _, config = stored
    rebuilt = make_plan(rebuild_config(config)).identity()
    assert rebuilt == config
    one = rebuild_config(config, ["digits-deit-elliptical"])
    assert one.models == ["digits-deit-elliptical"] and one.settings["pgd"]["steps"] == 3 and one.seed == 3


def test_changed_options_replace_the_stored_ones_and_the_rest_is_kept(stored):
    _, run_id, config = stored
    large = rebuild_config(config, reset=("settings",), eps=["16/255"], attacks=["pgd"], evidence_for=run_id)
    assert [e.text for e in large.eps] == ["16/255"] and large.attacks == ["pgd"] and large.evidence_for == run_id
    assert large.settings == {} and make_plan(large).settings["pgd"]["steps"] != 3  # PGD's own steps again
    assert (large.models, large.n_examples, large.seed, large.data) == (OPTIONS["models"], 12, 3, config["data"])


def test_a_configuration_this_robeval_cannot_give_back_is_one_line(stored):
    _, _, config = stored
    with pytest.raises(UserError, match="cannot be rebuilt here: made_up"):
        rebuild_config({**config, "made_up": 1})


def test_the_run_that_options_would_make_is_found_newest_first(stored):
    path, run_id, config = stored
    assert stored_identity({**OPTIONS, "out": "ignored", "store": "ignored"}) == config
    assert newest_matching([("newer", {**config, "seed": 4}), (run_id, config)], config) == run_id
    assert newest_matching([("other", {**config, "seed": 4})], config) is None
    assert newest_matching_run(path, OPTIONS) == run_id  # reproduce --resume's column lookup
    assert newest_matching_run(path, {**OPTIONS, "seed": 4}) is None
    assert newest_matching_run(path.parent / "absent.sqlite", OPTIONS) is None

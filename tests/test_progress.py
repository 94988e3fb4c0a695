"""Progress while a run works: bars per attack, one per model for all its shifted conditions, progress
inside a long unit, an ETA from the first finished unit, rates that fit their column."""

from __future__ import annotations

from types import SimpleNamespace

from robeval.api import evaluate_full
from robeval.report.terminal import TimeLeft, compact


class Recorder:
    def __init__(self) -> None:
        self.bars, self.events = [], []

    def start(self, bars, model, position) -> None:
        self.bars.append((model, position, bars))

    def advance(self, key, images, seconds=None) -> None:
        self.events.append(("advance", key, images))

    def partial(self, key, images) -> None:
        self.events.append(("partial", key, images))

    def note(self, text) -> None:
        pass

    def stop(self) -> None:
        pass


def test_a_long_attack_reports_progress_inside_its_unit(monkeypatch):
    from robeval.evaluation import progress

    monkeypatch.setattr(progress, "PARTIAL_EVERY_SECONDS", 0.0)
    rec = Recorder()
    evaluate_full(models="digits-deit", n_examples=10, attacks="fgsm,spsa", settings={"spsa": {"iterations": 5, "samples": 64}},
                  reporter=rec)
    (model, position, bars), = rec.bars
    assert model == "digits-deit" and position == (1, 1)
    assert [(b.key, b.total) for b in bars] == [(("digits-deit", "8/255", "fgsm"), 10), (("digits-deit", "8/255", "spsa"), 10)]
    spsa = [e for e in rec.events if e[1][2] == "spsa"]
    partial = [images for kind, _, images in spsa if kind == "partial"]
    assert len(partial) >= 3 and partial == sorted(partial) and 0 < partial[-1] <= 10
    assert spsa[-1] == ("advance", ("digits-deit", "8/255", "spsa"), 10)


def test_shifted_conditions_share_one_bar_per_model():
    rec = Recorder()
    evaluate_full(models="digits-deit", n_examples=10, shift="corruptions", corruptions="gaussian_noise,fog",
                  severities="1,2", eps="4/255,8/255", reporter=rec)
    (_, _, bars), = rec.bars
    assert [(b.key, b.label, b.total) for b in bars] == [(("digits-deit", "shift"), "corruptions: 4 conditions", 80)]


def test_eta_after_the_first_unit_and_compact_rates():
    task = SimpleNamespace(finished=False, total=100, completed=10, fields={"busy": 2.0, "timed": 10})
    assert TimeLeft().render(task).plain == "0:00:18"  # 90 images at 0.2 s each
    assert TimeLeft().render(SimpleNamespace(finished=False, total=100, completed=0, fields={})).plain == "-:--:--"
    assert compact(12.34) == "12.3" and compact(123456.0) == "123.5k" and compact(2.5e6) == "2.5M"


def test_a_worker_shows_its_own_share_of_the_batches():
    from robeval.core.eps import Eps
    from robeval.evaluation.progress import model_bars

    data = SimpleNamespace(batch_indices=lambda size, b: list(range(b * size, min(100, (b + 1) * size))))
    ev = SimpleNamespace(config=SimpleNamespace(eps=[Eps("8/255", 8 / 255)], shift=None), units=["clean", "pgd"],
                         job=SimpleNamespace(name="m"), condition_names=set(), conditions=[], data=data, batch_size=10,
                         key=lambda eps, unit, b: ("m", eps, unit, b, 0))  # fmt: skip
    share = [0, 2, 4, 6, 8]  # rank 0 of 2 over 10 pending batches
    (bar,) = model_bars(ev, share, done={("m", "8/255", "pgd", 0, 0)})
    assert (bar.total, bar.done) == (50, 10)  # ends full at 50/50, not at 50/100

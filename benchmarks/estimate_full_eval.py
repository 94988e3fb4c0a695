#!/usr/bin/env python
"""Estimate the wall time of the rebuttal's Table E: 2 models x 50,000 ImageNet images x the seven attacks.

    estimate = images x sum over the clean pass and the attacks of
               (forward passes per image x t_forward + backward passes per image x t_backward) / GPUs

Every input is measured and printed, none assumed:

* passes per image, per model and attack: from a stored robeval run (the engine counts each example's
  forward and backward image passes; run.json's ``passes_per_image``), by default the newest finished
  run in results/robeval.sqlite (``--store``, ``--run``, ``--eps``).  Without a stored run, a fresh
  digits demo run (digits-deit and digits-deit-elliptical at 8/255, 100 images) is made and used.
  The stored run's models stand in for Table E's in order (its first for deit-small, its second for
  deit-small-elliptical; a run of one model stands for both).  The fixed-budget attacks (FGSM, PGD,
  APGD-CE) spend the same per image on any data; APGD-T, FAB-T and Square work on an example only
  while it is robust, so their passes follow the stored run's robust accuracy;
* t_forward = 1 / forward img/s and t_backward = 1 / (forward+backward img/s) - t_forward, per
  Table E model: ``robeval profile -m deit-small -m deit-small-elliptical --device cuda --batch-size 128``
  prints both figures; give them with ``--forward-img-s`` and ``--forward-backward-img-s`` (one
  value per model, or one for both), or let ``--measure cuda`` measure them here with the same code;
* GPUs: batches are split evenly across workers (torchrun), so time divides by the GPU count.

    .venv/bin/python benchmarks/estimate_full_eval.py --forward-img-s 3845 --forward-backward-img-s 1225 [--gpus 1 8]
    .venv/bin/python benchmarks/estimate_full_eval.py --measure cuda [--store results/robeval.sqlite --run RUN_ID]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from robeval.attacks import SUITE
from robeval.core.defaults import CLEAN, DEFAULT_STORE
from robeval.core.errors import UserError
from robeval.results.runs import load_run
from robeval.store import existing_store
from robeval.results.summary import passes_per_image

TABLE_E = ("deit-small", "deit-small-elliptical")


def stored_passes(store: Path, run_id: str | None) -> tuple[dict, str]:
    """The passes per image of run ``run_id`` (None: the newest finished run) in ``store``, and where
    they came from; a fresh digits demo run when the store has none."""
    if run_id is None and not store.exists():
        return demo_passes(f"no store at {store}")
    with existing_store(store) as db:
        if run_id is None:
            runs = db.runs()
            finished = runs[runs["status"] == "finished"]
            if finished.empty:
                return demo_passes(f"no finished run in {store}")
            run_id = str(finished["id"].iloc[-1])
        run = load_run(db, run_id)
    return passes_per_image(run.summary), f"stored run {run_id} in {store}"


def demo_passes(why: str) -> tuple[dict, str]:
    from robeval.api import evaluate_full

    result = evaluate_full(models=["digits-deit", "digits-deit-elliptical"], eps="8/255", n_examples=100)
    return result.info["passes_per_image"], f"a fresh digits demo run, 100 images, not stored ({why})"


def pick_eps(passes: dict, wanted: str | None) -> str:
    found = list(dict.fromkeys(e for by_eps in passes.values() for e in by_eps))
    if wanted is not None and wanted not in found:
        raise SystemExit(f"error: eps {wanted} is not in the run (it has {', '.join(found)})")
    return wanted or found[0]


def throughputs(args) -> dict[str, tuple[float, float]]:
    """Per Table E model: (forward img/s, forward+backward img/s), given or measured with robeval profile's code."""
    if args.measure:
        from robeval.evaluation.profiling import profile

        table = profile(list(TABLE_E), batch_size=args.batch_size, device=args.measure, memory=False)
        return {r.model: (r.forward_img_s, r.forward_backward_img_s) for r in table.itertuples()}
    fwd, both = (list(v) * len(TABLE_E) if len(v) == 1 else v for v in (args.forward_img_s, args.forward_backward_img_s))
    return {m: (fwd[i], both[i]) for i, m in enumerate(TABLE_E)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--run", default=None, help="run id in --store (default: the newest finished run)")
    parser.add_argument("--eps", default=None, help="which eps of the run (default: its first)")
    parser.add_argument("--forward-img-s", type=float, nargs="+", help="forward img/s per Table E model (or one)")
    parser.add_argument("--forward-backward-img-s", type=float, nargs="+", help="forward+backward img/s, ditto")
    parser.add_argument("--measure", default=None, metavar="DEVICE", help="measure both with robeval profile's code")
    parser.add_argument("--batch-size", type=int, default=128, help="for --measure")
    parser.add_argument("--images", type=int, default=50_000)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    if not args.measure and not (args.forward_img_s and args.forward_backward_img_s):
        raise SystemExit("error: give --forward-img-s and --forward-backward-img-s (robeval profile prints them), "
                         "or --measure DEVICE")
    try:
        passes, source = stored_passes(args.store, args.run)
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
    eps = pick_eps(passes, args.eps)
    speeds = throughputs(args)
    stand_ins = list(passes)
    print(f"Table E estimate: {len(TABLE_E)} models x {args.images:,} images x the {len(SUITE)} attacks")
    print(f"  passes per image: {source}, at eps {eps}")
    total = 0.0
    for i, model in enumerate(TABLE_E):
        total += model_estimate(model, stand_ins[i % len(stand_ins)], passes, eps, speeds[model], args)
    for gpus in args.gpus:
        hours = total * args.images / gpus / 3600
        print(f"  Table E ({len(TABLE_E)} models): {hours:,.1f} h on {gpus} GPU(s) ({hours / 24:.1f} days)")


def model_estimate(model: str, stand_in: str, passes: dict, eps: str, speed: tuple[float, float], args) -> float:
    """Print one Table E model's inputs and seconds per image; return the seconds per image."""
    fwd_s, both_s = speed
    t_fwd, t_bwd = 1.0 / fwd_s, max(1.0 / both_s - 1.0 / fwd_s, 0.0)
    how = f"measured here on {args.measure}, batch {args.batch_size}" if args.measure else "given"
    print(f"  {model}: forward {fwd_s:,.1f} img/s, forward+backward {both_s:,.1f} img/s ({how}) -> t_forward "
          f"{t_fwd * 1e3:.3f} ms, t_backward {t_bwd * 1e3:.3f} ms; passes of {stand_in}")
    by_attack = passes[stand_in].get(eps, {})
    missing = [a for a in (CLEAN, *SUITE) if a not in by_attack]
    if missing:
        print(f"    not in the run, left out: {', '.join(missing)}")
    seconds = 0.0
    for attack in (a for a in (CLEAN, *SUITE) if a in by_attack):
        f, b = by_attack[attack]["forward"], by_attack[attack]["backward"]
        cost = f * t_fwd + b * t_bwd
        seconds += cost
        print(f"    {attack:8s} forward {f:9.1f}  backward {b:8.1f}  -> {cost:8.4f} s/image")
    print(f"    {'total':8s} {seconds:.4f} s/image = {seconds * args.images / 3600:,.1f} h for {args.images:,} images on 1 GPU")
    return seconds


if __name__ == "__main__":
    main()

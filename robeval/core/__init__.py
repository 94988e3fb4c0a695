"""The ground floor every layer of robeval may import, and which imports none of them: errors, eps and
norms, numbers read from text, names that only show (printable), crafting precision, seeds, threads and
the machine, the generic registry, lazy imports, JSON robeval did not write, atomic files, the defaults,
and the per-example record schema the engine writes in and the results read (records)."""

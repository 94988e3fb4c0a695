"""The efficiency table (robeval profile): fair to the model listed second."""

from __future__ import annotations


def test_profile_is_fair_to_the_model_listed_second():
    from robeval.evaluation.profiling import profile

    df = profile(["digits-deit", "digits-deit"], batch_size=16, repeats=5)
    # the same model twice: interleaved repeats and medians give (nearly) no change
    assert abs(df["forward_img_s_change_%"].iloc[1]) < 20 and abs(df["forward_backward_img_s_change_%"].iloc[1]) < 20
    # the memory of a pass, not of the process (torch alone holds several hundred MB)
    assert 0 <= df["pass_memory_MB"].iloc[0] < 200

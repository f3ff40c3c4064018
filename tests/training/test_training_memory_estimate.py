"""Issue 30: the training memory estimate the Train form's budget reads is within 2× of what real steps use, over random
valid forms (plain random sampling, seed 0; tiny sizes, each in a fresh process as a run is; bench/train_memory_estimate.py
compares larger forms, BERT-base included)."""

from __future__ import annotations

import random

from bench.train_memory_estimate import compare, random_form


def test_the_estimate_is_within_2x_of_the_memory_two_real_steps_use():
    rng = random.Random(0)
    forms = [random_form(rng, steps=2, tiny=True) for _ in range(3)]
    for form, result in zip(forms, compare(forms, workers=2), strict=True):
        assert 0.5 <= result["ratio"] <= 2, (form, result)

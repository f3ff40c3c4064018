"""The app server's settings: BERTVIZ_LITE_THREADS is checked, and a bad value is named, not a traceback."""

import pytest
import torch

from bertviz_lite.server import settings
from bertviz_lite.server.settings import THREADS_SETTING


def test_threads_default_to_one_and_take_a_whole_number():
    assert settings.app_threads({}) == 1 and settings.app_threads({THREADS_SETTING: " "}) == 1
    assert settings.app_threads({THREADS_SETTING: "4"}) == 4


@pytest.mark.parametrize("value", ["four", "0", "-2", "1.5"])
def test_a_bad_thread_count_is_named_in_the_message(value):
    with pytest.raises(ValueError, match=rf"BERTVIZ_LITE_THREADS must be a whole number of threads.*{value}"):
        settings.app_threads({THREADS_SETTING: value})


def test_the_app_falls_back_to_one_thread_and_says_why():
    before = torch.get_num_threads()
    try:
        assert settings.use_app_threads({THREADS_SETTING: "2"}) is None and torch.get_num_threads() == 2
        problem = settings.use_app_threads({THREADS_SETTING: "many"})
        assert problem.startswith("BERTVIZ_LITE_THREADS must be")
        assert problem.endswith("the app uses 1 thread.")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_cache_settings_default_and_take_numbers_above_zero():
    assert settings.cache_settings({}) == (
        settings.DEFAULT_CACHE_MB * 1024 * 1024,
        settings.DEFAULT_CACHE_TTL_S,
        None,
    )
    assert settings.cache_settings({settings.CACHE_MB_SETTING: "64", settings.CACHE_TTL_SETTING: "2.5"}) == (
        64 * 1024 * 1024,
        2.5,
        None,
    )


@pytest.mark.parametrize("value", ["lots", "0", "-1", "inf", "nan"])
def test_a_bad_cache_setting_falls_back_to_its_default_and_says_why(value):
    max_bytes, ttl_s, problem = settings.cache_settings({settings.CACHE_TTL_SETTING: value})
    assert (max_bytes, ttl_s) == (settings.DEFAULT_CACHE_MB * 1024 * 1024, settings.DEFAULT_CACHE_TTL_S)
    assert (
        problem == f"BERTVIZ_LITE_CACHE_TTL_S must be a number above 0 (it is {value!r}); the app uses 600 s."
    )

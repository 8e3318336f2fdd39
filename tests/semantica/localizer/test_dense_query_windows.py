"""A long query read by the dense channel as several windows (`localizer.dense_query_windows`): the windows cover the
query in order, each within the token limit; one window is exactly today's query vector; a function that only the
later part of the query names gains under the max of the windows' cosines; bad settings are a clear error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantica.config import EncoderConfig, load_config
from semantica.config.loader import ConfigError
from semantica.encoder import Encoder, resolve_model_path
from semantica.localizer.dense import cosines
from serving.core.localizer.dense import DenseFunctionChannel

MINILM = str(resolve_model_path(""))
TITLE = "Shopping cart total is wrong when a discount code is applied twice"
TRACE = ("Traceback (most recent call last):\n  File \"shop/tax.py\", line 12, in vat\n"
         "    return amount * rate_for(country)\nKeyError: 'country code missing from the VAT rate table'")
FILLER = " ".join(["The checkout page shows the basket and the customer clicks the pay button after reviewing it."] * 6)
ISSUE = f"{TITLE}\n\n{FILLER}\n\n{TRACE}"
VAT = "def vat(amount, country):\n    \"\"\"VAT for a country's rate table.\"\"\"\n    return amount * rate_for(country)\n"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(EncoderConfig(model_path=MINILM))


def channel(windows: int, pooling: str = "max") -> DenseFunctionChannel:
    config = dataclasses.replace(load_config(None, []).localizer, dense_model=MINILM, dense_query_windows=windows,
                                 dense_query_pooling=pooling)
    return DenseFunctionChannel(config, EncoderConfig())


def test_windows_cover_the_query_in_order_each_within_the_limit(encoder: Encoder) -> None:
    windows = encoder.tokenizer.windows(ISSUE, 64, 100)
    assert len(windows) == 3  # title and filler, filler, the traceback
    assert ISSUE.startswith(windows[0])
    assert "".join("".join(windows).split()) == "".join(ISSUE.split())  # every word once, in order
    for window in windows:
        assert len(encoder.tokenizer.encode([window], 10_000)[0][0]) <= 64
    assert encoder.tokenizer.windows(ISSUE, 64, 2) == windows[:2]
    assert encoder.tokenizer.windows("fix the cart", 64, 4) == ["fix the cart"]
    assert encoder.tokenizer.windows("", 64, 4) == [""]


def test_one_window_is_todays_query_vector(encoder: Encoder) -> None:
    single = channel(1).query_vectors(ISSUE)
    assert single.shape == (1, encoder.dim)
    np.testing.assert_array_equal(single[0], encoder.encode([ISSUE], 64)[0])
    several = channel(4).query_vectors(ISSUE)
    assert several.shape == (3, encoder.dim)  # as many windows as the query holds, up to the setting
    assert float(several[0] @ single[0]) > 0.99  # the first window is the query cut where one window cuts it


def test_a_function_named_late_in_the_query_gains_under_the_windows_max(encoder: Encoder) -> None:
    vat = encoder.encode([VAT], 256)
    one = cosines(channel(1).query_vectors(ISSUE), ["vat"], vat)["vat"]
    by_max = cosines(channel(4).query_vectors(ISSUE), ["vat"], vat, "max")["vat"]
    by_mean = cosines(channel(4).query_vectors(ISSUE), ["vat"], vat, "mean")["vat"]
    assert by_max > one + 0.1  # the traceback's window names the function; the first window never reaches it
    assert by_max > by_mean


def test_cosines_pool_the_windows_by_max_or_mean() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    windows = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert cosines(windows, ["x", "y"], vectors, "max") == {"x": pytest.approx(1.0), "y": pytest.approx(0.8)}
    assert cosines(windows, ["x", "y"], vectors, "mean") == {"x": pytest.approx(0.8), "y": pytest.approx(0.4)}
    assert cosines(windows[0], ["x"], vectors[:1]) == {"x": pytest.approx(1.0)}  # one vector as before


@pytest.mark.parametrize("override", ["localizer.dense_query_windows=0", "localizer.dense_query_pooling=sum"])
def test_bad_window_settings_are_a_clear_error(override: str) -> None:
    with pytest.raises(ConfigError, match="dense_query_windows"):
        load_config(None, [override])

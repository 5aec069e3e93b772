"""Admission under random and mutated Karmada documents: it never crashes, every rejection
names a field, and whatever it accepts survives a round trip and admission again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flotilla.api import codec
from flotilla.api.codec import CodecError
from flotilla.api.errors import UserError
from flotilla.cli.documents import read_sources
from flotilla.plane.benchmarks.hostile_documents import CONFIG, NOW, pure_admission, request_for
from services.webhook.admission import Review, admit, decode
from tests.property.shares import Share
from tests.property.strategies import (
    SEED_TEXTS,
    admitted,
    mutated_documents,
    mutations_of,
    valid_documents,
)


@given(valid_documents())
def test_valid_documents_are_accepted(doc: dict[str, Any]) -> None:
    review = pure_admission(request_for(doc))
    assert review.errors == []
    assert review.allowed


@given(mutated_documents())
def test_admission_never_raises_and_every_rejection_names_a_field(doc: dict[str, Any]) -> None:
    review = pure_admission(request_for(doc))  # raising anything at all fails the property
    if review.obj is not None:
        codec.to_json(review.obj)  # the servicer answers with the admitted object
    for error in review.errors:
        assert error.path, f"no field path in {error.reason!r}"
        assert error.reason and len(str(error).splitlines()) == 1


@given(mutated_documents())
def test_a_document_as_yaml_loads_it_is_decoded_without_raising(doc: dict[str, Any]) -> None:
    # No JSON in between, as `flotillactl whatif` decodes: keys that are not strings reach the codec.
    review = decode(doc)
    if review.obj is not None:
        review.errors = admit(review.obj, None, CONFIG, NOW)
    assert all(error.path and len(str(error).splitlines()) == 1 for error in review.errors)


# The share of examples that must reach a test's deepest checks with a broken document. Each
# example is drawn to reach them (`mutations_of(..., kept=...)`), and falls back to the unbroken
# document when no try at breaking it kept the property, so the share varies from run to run, well
# above a quarter. Below a quarter, the tests would mostly check unbroken documents.
AT_LEAST = 0.25


def _decoded(doc: Any) -> Review:
    return decode(json.loads(request_for(doc).object_json))


def test_an_update_never_raises_and_every_rejection_names_a_field() -> None:
    as_update = Share("a broken update admitted against the stored object", AT_LEAST)

    @given(valid_documents(), st.data())
    def update_never_raises(doc: dict[str, Any], data: st.DataObject) -> None:
        stored = pure_admission(request_for(doc)).obj
        assert stored is not None

        def decodes_as_stored(broken: dict[str, Any]) -> bool:
            return type(_decoded(broken).obj) is type(stored)

        broken = data.draw(mutations_of(doc, kept=decodes_as_stored))
        update = _decoded(broken)
        if update.obj is not None and type(update.obj) is type(stored):
            as_update.reached(broken != doc)
            update.errors = admit(update.obj, stored, CONFIG, NOW)
            codec.to_json(update.obj)
        else:
            as_update.reached(False)
        assert all(error.path and len(str(error).splitlines()) == 1 for error in update.errors)

    update_never_raises()
    as_update.check()


def test_an_accepted_object_round_trips_and_is_admitted_again() -> None:
    accepted = Share("a broken document accepted", AT_LEAST)

    @given(valid_documents(), st.data())
    def round_trips(seed: dict[str, Any], data: st.DataObject) -> None:
        doc = data.draw(mutations_of(seed, kept=admitted))
        review = pure_admission(request_for(doc))
        accepted.reached(review.allowed and doc != seed)
        if not review.allowed:
            return
        assert review.obj is not None
        again = decode(json.loads(codec.to_json(review.obj)))
        assert again.obj == review.obj
        assert admit(again.obj, None, CONFIG, NOW) == []
        assert again.obj == review.obj, "defaulting an admitted object changed it"

    round_trips()
    accepted.check()


@given(st.sampled_from(SEED_TEXTS), st.data())
def test_mangled_yaml_text_is_one_codec_error(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    junk = data.draw(st.text(st.sampled_from(list(":-[]{}&*!|>'\"#%@`,? \n\t\x00\u00e9")), max_size=6))
    end = data.draw(st.integers(min_value=cut, max_value=min(len(text), cut + 8)))
    mangled = text[:cut] + junk + text[end:]
    try:
        for doc in codec.load_yaml_documents(mangled):
            pure_admission(request_for(doc))
    except CodecError as e:
        assert str(e) and "\n" not in str(e)


@given(st.binary(max_size=64), st.sampled_from(SEED_TEXTS))
def test_any_bytes_in_a_file_are_one_cli_error(tmp_path_factory: pytest.TempPathFactory, noise: bytes,
                                               text: str) -> None:
    path = tmp_path_factory.mktemp("apply") / "doc.yaml"
    path.write_bytes(text.encode()[:40] + noise + text.encode()[40:])
    try:
        read_sources([str(path)])
    except UserError as e:
        assert str(e).startswith(str(path)) and "\n" not in str(e)

"""The lazy name -> "module:attr" tables: names known without importing their targets."""

from __future__ import annotations

import sys

import pytest

from hf_skillfollow._lazy import LazyRegistry, lazy_exports


def test_membership_and_listing_import_nothing() -> None:
    sys.modules.pop("json.tool", None)
    reg = LazyRegistry("tool", {"pretty": "json.tool:main"})
    assert "pretty" in reg and "nope" not in reg and list(reg) == ["pretty"] and len(reg) == 1
    assert "json.tool" not in sys.modules
    assert reg.target("pretty") == "json.tool:main"


def test_lookup_imports_once_and_unknown_names_list_the_choices() -> None:
    reg = LazyRegistry("codec", {"dumps": "json:dumps", "loads": "json:loads"})
    import json

    assert reg["dumps"] is json.dumps and reg.resolve("loads") is json.loads
    with pytest.raises(
        ValueError, match=r"unknown codec 'yaml'; choose one of \['dumps', 'loads'\]"
    ):
        reg.resolve("yaml")
    with pytest.raises(KeyError):
        reg["yaml"]


def test_malformed_target_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="'json.dumps' is not 'module:attr'"):
        LazyRegistry("codec", {"dumps": "json.dumps"})


def test_module_getattr_names_the_package_on_a_miss() -> None:
    getattr_ = lazy_exports("pkg", {"dumps": "json"})
    import json

    assert getattr_("dumps") is json.dumps
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")

"""The model's speed-ups change nothing: fast paths agree with the general code they shortcut."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from xspec.models import ordered
from xspec.spec import ids

digits = st.text(alphabet="0123456789", min_size=0, max_size=22)
id_text = st.one_of(
    st.builds(lambda a, b: f"{a}-{b}", digits, digits),
    digits,
    st.text(alphabet="0123456789-+* (\t\x00", max_size=24),
).map(str.encode)


@settings(max_examples=3000)
@given(arg=id_text, missing=st.sampled_from([0, ids.U64_MAX]))
def test_canonical_fast_path_agrees_with_the_full_parser(arg, missing):
    fast = ids.canonical_id(arg, missing)
    original = ids.canonical_id
    ids.canonical_id = lambda a, m=0: None  # force the general parser
    try:
        for strict in (False, True):
            for auto in (False, True):
                slow = ids.parse_id(arg, strict=strict, missing_seq=missing, allow_auto_seq=auto)
                if fast is not None:
                    assert slow is not None and slow.id == fast and slow.seq_given, (arg, strict, auto)
    finally:
        ids.canonical_id = original


keys = st.lists(st.integers(0, 400), unique=True, max_size=300)


def small_lists(sd: SortedDict) -> SortedDict:
    sd._list._reset(4)  # many sublists, so the helpers cross sublist boundaries
    return sd


@settings(max_examples=400)
@given(ks=keys, lo=st.integers(-5, 405), hi=st.integers(-5, 405))
def test_ordered_helpers_agree_with_sorted_semantics(ks, lo, hi):
    sd = small_lists(SortedDict({k: None for k in ks}))
    srt = sorted(ks)
    if srt:
        assert ordered.first_key(sd) == srt[0] and ordered.last_key(sd) == srt[-1]
    i = bisect_left(srt, lo)
    assert ordered.first_key_from(sd, lo) == (srt[i] if i < len(srt) else None)
    i = bisect_right(srt, lo)
    assert ordered.first_key_from(sd, lo, inclusive=False) == (srt[i] if i < len(srt) else None)
    i = bisect_right(srt, hi)
    assert ordered.last_key_to(sd, hi) == (srt[i - 1] if i else None)
    i = bisect_left(srt, hi)
    assert ordered.last_key_to(sd, hi, inclusive=False) == (srt[i - 1] if i else None)
    assert list(ordered.keys_from(sd, lo, hi)) == [k for k in srt if lo <= k <= hi]
    assert list(ordered.keys_from(sd, lo)) == [k for k in srt if k >= lo]
    assert list(ordered.keys_down_from(sd, hi, lo)) == [k for k in reversed(srt) if lo <= k <= hi]


ops = st.lists(st.tuples(st.sampled_from(["put", "discard", "trim", "index"]), st.integers(0, 120)), max_size=200)


@settings(max_examples=300)
@given(ks=st.lists(st.integers(0, 100), unique=True, max_size=60), steps=ops)
def test_ordered_updates_agree_with_sorted_dict(ks, steps):
    """put and discard_all leave the same dict as SortedDict's own methods, index included."""
    sd = small_lists(SortedDict({k: k for k in ks}))
    ref = SortedDict({k: k for k in ks})
    for op, k in steps:
        if op == "put":
            ordered.put(sd, k, -k)
            ref[k] = -k
        elif op == "discard":  # SortedDict's own removal, between the helpers' updates
            assert sd.pop(k, None) == ref.pop(k, None)
        elif op == "trim":  # the k smallest keys, as a trim removes them, or any keys
            head = list(ref.keys())[:k % 7]
            chosen = head if k % 2 else [x for x in ref.keys() if x % 3 == k % 3][:4]
            ordered.discard_all(sd, chosen)
            for x in chosen:
                del ref[x]
        else:
            sd.peekitem(len(sd) // 2) if sd else None  # builds the positional index the updates must keep
        sd._list._check()
        assert list(sd.items()) == list(ref.items())


@settings(max_examples=2000)
@given(data=st.one_of(st.binary(max_size=20), st.integers(-(1 << 64), 1 << 64).map(lambda n: str(n).encode())))
def test_element_size_shortcut_agrees_with_the_listpack_encoding(data):
    """A short element that does not start like an integer skips the integer check, with the same size."""
    from xspec.spec import listpack

    if len(data) > 20:
        return
    value = listpack.as_listpack_int(data)
    expected = listpack.int_element_size(value) if value is not None else len(data) + 2
    assert listpack.element_size(data) == expected
